import { layoutGguf, type GgufLayout } from "./ggufLayout.js";
import { mapleMetadata, mapleTensors } from "./mapleArchitecture.js";
import type { SyntheticModelSpec } from "./modelSpec.js";
import type { TensorPlan } from "./tensorPlan.js";
import { qwen3Metadata, qwen3Tensors } from "./qwen3Architecture.js";

/** The complete layout (metadata, tensor list, offsets, size) of a synthetic model's file. */
export function layoutSyntheticModel(spec: SyntheticModelSpec): GgufLayout {
    const metadata = spec.architecture === "maple" ? mapleMetadata(spec) : qwen3Metadata(spec);
    return layoutGguf(metadata, syntheticModelTensors(spec));
}

/** Just the tensor list: cheap, unlike the metadata, which carries the whole tokenizer. */
export function syntheticModelTensors(spec: SyntheticModelSpec): TensorPlan[] {
    return spec.architecture === "maple" ? mapleTensors(spec) : qwen3Tensors(spec);
}

/** Per-tensor PRNG seed: the same model name, version and tensor always give the same bytes. */
export function tensorSeed(spec: SyntheticModelSpec, tensorName: string): string {
    return `maple-synthetic/${spec.name}/v${spec.version}/${tensorName}`;
}

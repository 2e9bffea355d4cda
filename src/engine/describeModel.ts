import { stat } from "node:fs/promises";
import { GgmlType, type GgufTensorInfo, type LlamaModel } from "node-llama-cpp";
import type { ModelInfo } from "./types.js";
import { describeWeightTypes, type TensorSummary } from "./weightTypes.js";

/** What the rest of Maple knows about the loaded model, from its GGUF metadata and tensors. */
export async function describeModel(model: LlamaModel, path: string): Promise<ModelInfo> {
    const metadata = model.fileInfo.metadata as unknown as {
        general: { architecture: string; name?: string; synthetic?: boolean };
        tokenizer?: { chat_template?: string };
    };
    const tensors = model.fileInfo.fullTensorInfo ?? model.fileInfo.tensorInfo ?? [];
    const embedding = tensors.find((tensor) => tensor.name === "token_embd.weight");
    const vocabularySize = Number(embedding?.dimensions[1] ?? 0);
    return {
        path,
        architecture: metadata.general.architecture,
        name: metadata.general.name,
        synthetic: metadata.general.synthetic === true,
        fileSizeBytes: (await stat(path)).size,
        parameterCount: model.fileInsights.totalParameters || undefined,
        dtype: describeWeightTypes(tensorSummaries(tensors)),
        trainContextSize: model.trainContextSize,
        slidingWindow: slidingWindowOf(model),
        vocabularySize,
        chatTemplate: metadata.tokenizer?.chat_template,
        bosToken: model.tokens.bosString ?? "",
        eosToken: model.tokens.eosString ?? ""
    };
}

/** A GGUF tensor table as the weight-type rules read it: each tensor's name, type name and element count. */
export function tensorSummaries(tensors: readonly GgufTensorInfo[]): TensorSummary[] {
    return tensors.map((tensor) => ({
        name: tensor.name, type: GgmlType[tensor.ggmlType] ?? String(tensor.ggmlType),
        elements: tensor.dimensions.reduce<number>((product, size) => product * Number(size), 1)
    }));
}

/** The model's sliding attention window in tokens (GGUF `ARCH.attention.sliding_window`), 0 when it has none. */
export function slidingWindowOf(model: LlamaModel): number {
    const metadata = model.fileInfo.metadata as unknown as Record<string, { attention?: { sliding_window?: number } } | undefined> & { general: { architecture: string } };
    return Number(metadata[metadata.general.architecture]?.attention?.sliding_window ?? 0);
}

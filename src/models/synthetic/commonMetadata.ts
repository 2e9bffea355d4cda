import type { SyntheticModelSpec } from "./modelSpec.js";
import { bool, f32, str, strArray, u32, type MetadataEntries } from "./metadataValues.js";
import { tokenizerMetadata, tokenizerVocabSize } from "./familyTokenizers.js";

/**
 * The bool key that marks a file's weights as random, so a server can report `synthetic: true`
 * (node-llama-cpp: `model.fileInfo.metadata.general.synthetic`). llama.cpp ignores keys it does
 * not know; for tools that only read standard keys, `general.tags` also says "synthetic".
 */
export const syntheticMarkerKey = "general.synthetic";

/**
 * The keys every synthetic model has: general info, the architecture-prefixed transformer
 * shape and the model's family tokenizer with its chat template.
 */
export function commonMetadata(spec: SyntheticModelSpec, fileType: number, chatTemplate: string): MetadataEntries {
    const arch = spec.architecture;
    const tokenizer = spec.tokenizer ?? "qwen3";
    const { headCount, headCountKv, headDim, ropeFreqBase } = spec.attention;
    return {
        "general.architecture": str(arch),
        "general.type": str("model"),
        "general.name": str(spec.displayName),
        "general.tags": strArray(["synthetic", "random-weights"]),
        [syntheticMarkerKey]: bool(true),
        "general.file_type": u32(fileType),
        "general.quantization_version": u32(2),
        [`${arch}.vocab_size`]: u32(tokenizerVocabSize(tokenizer)),
        [`${arch}.context_length`]: u32(spec.contextLength),
        [`${arch}.embedding_length`]: u32(spec.embeddingLength),
        [`${arch}.block_count`]: u32(spec.blockCount),
        [`${arch}.attention.head_count`]: u32(headCount),
        [`${arch}.attention.head_count_kv`]: u32(headCountKv),
        // explicit because head_dim × heads need not equal the width (Qwen3-0.6B: 16 × 128 ≠ 1024)
        [`${arch}.attention.key_length`]: u32(headDim),
        [`${arch}.attention.value_length`]: u32(headDim),
        [`${arch}.attention.layer_norm_rms_epsilon`]: f32(spec.rmsNormEps),
        [`${arch}.rope.freq_base`]: f32(ropeFreqBase),
        ...tokenizerMetadata(tokenizer),
        "tokenizer.chat_template": str(chatTemplate)
    };
}

import { attentionTensors, embeddingTensors, normWeight, projectionWeight } from "./commonTensors.js";
import { commonMetadata } from "./commonMetadata.js";
import { GgmlType } from "./ggmlTypes.js";
import { LlamaFileType } from "./llamaFileTypes.js";
import { u32, type MetadataEntries } from "./metadataValues.js";
import type { Qwen3ModelSpec } from "./modelSpec.js";
import { familyChatTemplate, qwen3ChatTemplate } from "./syntheticChatTemplates.js";
import type { TensorPlan } from "./tensorPlan.js";

/** Tensors of llama.cpp's `qwen3` (src/models/qwen3.cpp): attention with Q/K norm, SwiGLU FFN. */
export function qwen3Tensors(spec: Qwen3ModelSpec): TensorPlan[] {
    const { embeddingLength: width, feedForwardLength: ffn, feedForwardType: type } = spec;
    const blocks = Array.from({ length: spec.blockCount }, (_, block) => {
        const prefix = `blk.${block}`;
        return [
            ...attentionTensors(spec, block),
            normWeight(`${prefix}.ffn_norm.weight`, width),
            projectionWeight(`${prefix}.ffn_gate.weight`, [width, ffn], type),
            projectionWeight(`${prefix}.ffn_down.weight`, [ffn, width], type),
            projectionWeight(`${prefix}.ffn_up.weight`, [width, ffn], type)
        ];
    });
    return [...embeddingTensors(spec), ...blocks.flat()];
}

/** The keys qwen3's loader reads, with the spec's family template or Qwen3's own, unmodified. */
export function qwen3Metadata(spec: Qwen3ModelSpec): MetadataEntries {
    const fileType = spec.feedForwardType === GgmlType.Q4_0 ? LlamaFileType.MostlyQ4_0 : LlamaFileType.MostlyQ8_0;
    return {
        ...commonMetadata(spec, fileType, spec.chatTemplate === undefined ? qwen3ChatTemplate() : familyChatTemplate(spec.chatTemplate)),
        "qwen3.feed_forward_length": u32(spec.feedForwardLength),
        // llama.cpp's LLAMA_POOLING_TYPE_LAST
        ...(spec.pooling === "last" ? { "qwen3.pooling_type": u32(3) } : {})
    };
}

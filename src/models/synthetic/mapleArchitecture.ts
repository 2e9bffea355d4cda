import { attentionTensors, embeddingTensors, normWeight, projectionWeight } from "./commonTensors.js";
import { commonMetadata } from "./commonMetadata.js";
import { GgmlType } from "./ggmlTypes.js";
import { LlamaFileType } from "./llamaFileTypes.js";
import { mapleChatTemplate } from "./mapleChatTemplate.js";
import { boolArray, f32Array, u32, type MetadataEntries } from "./metadataValues.js";
import type { MapleModelSpec } from "./modelSpec.js";
import type { TensorPlan } from "./tensorPlan.js";

/**
 * Tensors of llama.cpp's `maple` (src/models/maple.cpp): per block, attention with Q/K norm and
 * a softmax-routed MoE FFN with no shared expert; expert tensors are stacked [.., .., n_expert].
 */
export function mapleTensors(spec: MapleModelSpec): TensorPlan[] {
    const { embeddingLength: width } = spec;
    const { count, feedForwardLength: ffn, type } = spec.experts;
    const blocks = Array.from({ length: spec.blockCount }, (_, block) => {
        const prefix = `blk.${block}`;
        return [
            ...attentionTensors(spec, block),
            normWeight(`${prefix}.ffn_norm.weight`, width),
            // llama.cpp multiplies the router in F32; converters keep it F32 too
            projectionWeight(`${prefix}.ffn_gate_inp.weight`, [width, count], GgmlType.F32),
            projectionWeight(`${prefix}.ffn_gate_exps.weight`, [width, ffn, count], type),
            projectionWeight(`${prefix}.ffn_down_exps.weight`, [ffn, width, count], type),
            projectionWeight(`${prefix}.ffn_up_exps.weight`, [width, ffn, count], type)
        ];
    });
    return [...embeddingTensors(spec), ...blocks.flat()];
}

/** The keys maple's loader reads, as conversion/maple.py writes them. */
export function mapleMetadata(spec: MapleModelSpec): MetadataEntries {
    if (spec.slidingWindowPattern.length !== spec.blockCount) {
        throw new Error(`${spec.name}: sliding-window pattern needs one entry per block`);
    }
    const fileType = spec.experts.type === GgmlType.TQ2_0 ? LlamaFileType.MostlyTQ2_0 : LlamaFileType.MostlyQ8_0;
    return {
        ...commonMetadata(spec, fileType, mapleChatTemplate),
        "maple.rope.dimension_count": u32(spec.attention.headDim),
        "maple.expert_count": u32(spec.experts.count),
        "maple.expert_used_count": u32(spec.experts.usedCount),
        "maple.expert_feed_forward_length": u32(spec.experts.feedForwardLength),
        "maple.attention.sliding_window": u32(spec.slidingWindow),
        "maple.attention.sliding_window_pattern": boolArray(spec.slidingWindowPattern),
        "maple.swiglu_clamp_exp": f32Array(new Array<number>(spec.blockCount).fill(spec.swigluClamp))
    };
}

import { GgmlType } from "./ggmlTypes.js";
import type { SyntheticModelSpec } from "./modelSpec.js";
import { tokenizerVocabSize } from "./familyTokenizers.js";
import type { TensorPlan } from "./tensorPlan.js";

/** RMS-norm weights of 1.0: the norms then only rescale, which keeps activations ≈ unit size. */
export function normWeight(name: string, length: number): TensorPlan {
    return { name, shape: [length], type: GgmlType.F32, init: { kind: "constant", value: 1 } };
}

/**
 * A weight matrix (or stack of them) whose outputs have roughly unit variance for unit-variance
 * inputs: std = 1/√fan_in. Small, bounded values like these can never overflow to inf/NaN.
 */
export function projectionWeight(name: string, shape: readonly number[], type: GgmlType): TensorPlan {
    const fanIn = shape[0] ?? 1;
    return { name, shape, type, init: { kind: "random", std: 1 / Math.sqrt(fanIn) } };
}

/** token_embd, output_norm and (unless tied) output. */
export function embeddingTensors(spec: SyntheticModelSpec): TensorPlan[] {
    const { embeddingLength: width, embeddingType: type } = spec;
    const vocabSize = tokenizerVocabSize(spec.tokenizer ?? "qwen3");
    return [
        projectionWeight("token_embd.weight", [width, vocabSize], type),
        normWeight("output_norm.weight", width),
        ...(spec.tiedEmbeddings ? [] : [projectionWeight("output.weight", [width, vocabSize], type)])
    ];
}

/** One block's attention: pre-norm, Q/K/V/O projections and the per-head Q/K RMS norms. */
export function attentionTensors(spec: SyntheticModelSpec, block: number): TensorPlan[] {
    const { embeddingLength: width, attentionType: type } = spec;
    const { headCount, headCountKv, headDim } = spec.attention;
    const prefix = `blk.${block}`;
    return [
        normWeight(`${prefix}.attn_norm.weight`, width),
        projectionWeight(`${prefix}.attn_q.weight`, [width, headCount * headDim], type),
        projectionWeight(`${prefix}.attn_k.weight`, [width, headCountKv * headDim], type),
        projectionWeight(`${prefix}.attn_v.weight`, [width, headCountKv * headDim], type),
        projectionWeight(`${prefix}.attn_output.weight`, [headCount * headDim, width], type),
        normWeight(`${prefix}.attn_q_norm.weight`, headDim),
        normWeight(`${prefix}.attn_k_norm.weight`, headDim)
    ];
}

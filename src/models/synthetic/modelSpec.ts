import type { SyntheticTokenizerName } from "./familyTokenizers.js";
import type { GgmlType } from "./ggmlTypes.js";

/** Attention geometry shared by both architectures (grouped-query attention with Q/K RMS norm). */
export interface AttentionSpec {
    readonly headCount: number;
    readonly headCountKv: number;
    readonly headDim: number;
    readonly ropeFreqBase: number;
}

interface CommonSpec {
    /** the public name, e.g. "maple-tiny" */
    readonly name: string;
    /** bumped whenever the file's contents change, so stale files are never reused */
    readonly version: number;
    /** `general.name` */
    readonly displayName: string;
    readonly contextLength: number;
    readonly embeddingLength: number;
    readonly blockCount: number;
    readonly rmsNormEps: number;
    readonly attention: AttentionSpec;
    /** output.weight omitted: llama.cpp reuses token_embd (as in Qwen3 ≤ 4B) */
    readonly tiedEmbeddings: boolean;
    /** storage of token_embd / output */
    readonly embeddingType: GgmlType;
    /** storage of attn_q/k/v/output */
    readonly attentionType: GgmlType;
    /** The family tokenizer the file carries (its vocabulary sizes token_embd); default Qwen3's. */
    readonly tokenizer?: SyntheticTokenizerName;
}

/** deepgrove's `maple`: MoE FFN in every layer, mixed sliding-window / global attention. */
export interface MapleModelSpec extends CommonSpec {
    readonly architecture: "maple";
    readonly experts: {
        readonly count: number;
        readonly usedCount: number;
        readonly feedForwardLength: number;
        readonly type: GgmlType;
    };
    readonly slidingWindow: number;
    /** per layer: true = sliding-window attention with RoPE, false = global attention without */
    readonly slidingWindowPattern: readonly boolean[];
    /** the reference model clamps the experts' SwiGLU gate/up activations at this value */
    readonly swigluClamp: number;
}

/** Qwen3 dense. */
export interface Qwen3ModelSpec extends CommonSpec {
    readonly architecture: "qwen3";
    readonly feedForwardLength: number;
    readonly feedForwardType: GgmlType;
    /** An embedding model: llama.cpp pools its outputs this way (GGUF `qwen3.pooling_type`), as Qwen3-Embedding's last token. */
    readonly pooling?: "last";
    /** The chat template: a file of the repository's `templates/` (a family's real one); default Qwen3's own. */
    readonly chatTemplate?: string;
}

export type SyntheticModelSpec = MapleModelSpec | Qwen3ModelSpec;

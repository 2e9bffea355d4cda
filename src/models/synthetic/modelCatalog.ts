import { GgmlType } from "./ggmlTypes.js";
import type { MapleModelSpec, Qwen3ModelSpec, SyntheticModelSpec } from "./modelSpec.js";

/**
 * Three sliding-window layers, then one global layer, repeated (3:1). llama.cpp's maple loader
 * reads `maple.attention.sliding_window_pattern` as one entry per layer (`get_arr` into
 * `is_swa_impl`, a bool/u32/i32 array, non-zero = sliding window with RoPE); a scalar period,
 * as some other architectures take, is refused with "array key not found".
 */
const slidingPattern = (blocks: number): boolean[] => Array.from({ length: blocks }, (_, block) => block % 4 !== 3);

/**
 * The `maple` architecture at toy size for tests: every feature of the real model (MoE with
 * ternary TQ2_0 experts, sliding-window/global attention mix, Q/K norm, SwiGLU clamp) but
 * 4 × 256-wide layers. TQ2_0 needs rows of 256 values, hence the 256-wide experts. Most of the
 * ≈93 MB is the two Q8_0 151,936 × 256 vocabulary matrices.
 */
const mapleTiny: MapleModelSpec = {
    architecture: "maple",
    name: "maple-tiny",
    version: 2,
    displayName: "maple-tiny (synthetic, random weights)",
    contextLength: 32_768,
    embeddingLength: 256,
    blockCount: 4,
    rmsNormEps: 1e-6,
    attention: { headCount: 4, headCountKv: 2, headDim: 64, ropeFreqBase: 1_000_000 },
    tiedEmbeddings: false,
    embeddingType: GgmlType.Q8_0,
    attentionType: GgmlType.Q8_0,
    experts: { count: 16, usedCount: 2, feedForwardLength: 256, type: GgmlType.TQ2_0 },
    // small enough that a 512-token test context actually slides
    slidingWindow: 128,
    slidingWindowPattern: slidingPattern(4),
    swigluClamp: 7
};

/**
 * deepgrove/maple-preview's layout, for benchmarks: the official `maple-preview-TQ2_0-head-Q4_K.gguf`
 * as far as it is publicly known (docs/models.md): 24 layers, 256 experts with 8 active and no
 * shared expert, per-head Q/K RMS norm, sliding window 512 on 3 of every 4 layers, 131,072-token
 * training context; ternary TQ2_0 attention projections and experts (168 tensors), F32 norms
 * and routers (121), Q4_K token embeddings and output head (untied).
 * Hidden sizes are not published; these are chosen to land on ~20B total / ~1B active:
 *   experts   24 layers × 256 × 3 × 2048 × 512          = 19.33B  (TQ2_0)
 *   attention 24 × (2·2048·2048 + 2·2048·512)          =  0.25B  (TQ2_0)
 *   router    24 × 2048 × 256                          =  0.01B  (F32)
 *   vocab     2 × 151,936 × 2048                       =  0.62B  (Q4_K)
 *   total ≈ 20.2B; active per token ≈ 0.25B + 8/256 of the experts (0.60B) + output 0.31B ≈ 1.2B.
 * The ternary part, 19,579,011,072 values, is exactly what the two official files' size
 * difference implies (TQ2_0 and TQ1_0 differ by 12 bytes per 256 ternary values:
 * 917,766,144 bytes). File ≈ 5.45 GB against the official 5.90 GB: the rest is the official
 * vocabulary (and tokenizer), which is not Qwen3's and not public; this twin keeps Qwen3's.
 * 16 query heads / 4 KV heads of 128 are a typical choice at this width, not a documented one.
 */
const maplePreview: MapleModelSpec = {
    architecture: "maple",
    name: "maple-preview",
    // v3: the official file's layout (TQ2_0 attention, Q4_K vocabulary, window 512, 128K context)
    version: 3,
    displayName: "maple-preview (synthetic, random weights)",
    contextLength: 131_072,
    embeddingLength: 2048,
    blockCount: 24,
    rmsNormEps: 1e-6,
    attention: { headCount: 16, headCountKv: 4, headDim: 128, ropeFreqBase: 1_000_000 },
    tiedEmbeddings: false,
    embeddingType: GgmlType.Q4_K,
    attentionType: GgmlType.TQ2_0,
    experts: { count: 256, usedCount: 8, feedForwardLength: 512, type: GgmlType.TQ2_0 },
    slidingWindow: 512,
    slidingWindowPattern: slidingPattern(24),
    swigluClamp: 7
};

/** Qwen3 dense at toy size for tests; embeddings tied, as in the small Qwen3 models. */
const qwen3Tiny: Qwen3ModelSpec = {
    architecture: "qwen3",
    name: "qwen3-tiny",
    version: 2,
    displayName: "qwen3-tiny (synthetic, random weights)",
    contextLength: 40_960,
    embeddingLength: 256,
    blockCount: 4,
    rmsNormEps: 1e-6,
    attention: { headCount: 4, headCountKv: 2, headDim: 64, ropeFreqBase: 1_000_000 },
    tiedEmbeddings: true,
    embeddingType: GgmlType.Q8_0,
    attentionType: GgmlType.Q8_0,
    feedForwardLength: 768,
    feedForwardType: GgmlType.Q8_0
};

/** Qwen3-0.6B's exact shapes (its config.json), all matrices Q8_0, for benchmarks. */
const qwen3_0_6b: Qwen3ModelSpec = {
    architecture: "qwen3",
    name: "qwen3-0.6b",
    version: 2,
    displayName: "Qwen3-0.6B (synthetic, random weights)",
    contextLength: 40_960,
    embeddingLength: 1024,
    blockCount: 28,
    rmsNormEps: 1e-6,
    attention: { headCount: 16, headCountKv: 8, headDim: 128, ropeFreqBase: 1_000_000 },
    tiedEmbeddings: true,
    embeddingType: GgmlType.Q8_0,
    attentionType: GgmlType.Q8_0,
    feedForwardLength: 3072,
    feedForwardType: GgmlType.Q8_0
};

/**
 * An embedding twin at toy size for tests: qwen3 with last-token pooling, as Qwen3-Embedding
 * (its tokenizer, Qwen3's), so /v1/embeddings runs through llama.cpp's pooling with no download.
 */
const qwen3EmbeddingTiny: Qwen3ModelSpec = {
    ...qwen3Tiny,
    name: "qwen3-embedding-tiny",
    version: 1,
    displayName: "qwen3-embedding-tiny (synthetic, random weights)",
    contextLength: 32_768,
    pooling: "last"
};

/** Qwen3-Embedding-0.6B's shapes (its config.json: Qwen3-0.6B's, 32K context), last-token pooling, for benchmarks. */
const qwen3Embedding0_6b: Qwen3ModelSpec = {
    ...qwen3_0_6b,
    name: "qwen3-embedding-0.6b",
    version: 1,
    displayName: "Qwen3-Embedding-0.6B (synthetic, random weights)",
    contextLength: 32_768,
    pooling: "last"
};

/**
 * A format twin: a family's real tokenizer and chat template on random qwen3 weights (the chat
 * format is the template's and the vocabulary's, not the architecture's), so a family's special
 * tokens and template run through the real engine with no download. 64 wide and 2 layers, since
 * the vocabularies are large: the token embeddings (tied, Q8_0) are most of each file, 8.5 MB for
 * Llama 3's 128,256 rows, 17.8 MB for Gemma 3's 262,144.
 */
function formatTwin(name: string, family: string, tokenizer: Qwen3ModelSpec["tokenizer"], chatTemplate: string): Qwen3ModelSpec {
    return {
        ...qwen3Tiny,
        name,
        version: 1,
        displayName: `${name} (synthetic, random weights; ${family}'s tokenizer and chat template)`,
        embeddingLength: 64,
        blockCount: 2,
        feedForwardLength: 128,
        tokenizer,
        chatTemplate
    };
}

const formatTwins: readonly Qwen3ModelSpec[] = [
    formatTwin("gpt-oss-tiny", "gpt-oss", "gpt-oss", "openai-gpt-oss-120b.jinja"),
    formatTwin("llama3.1-tiny", "Llama 3.1", "llama3.1", "meta-llama-Llama-3.1-8B-Instruct.jinja"),
    // DeepSeek R1's own template shows no tools and leaves a lone call's
    // section open; llama.cpp's fixed R1 template (what llama-server users are told to use) does both.
    formatTwin("deepseek-r1-tiny", "DeepSeek R1", "deepseek-r1", "llama-cpp-deepseek-r1.jinja"),
    formatTwin("gemma3-tiny", "Gemma 3", "gemma3", "google-gemma-3-4b-it.jinja"),
    formatTwin("qwen3-coder-tiny", "Qwen3-Coder", "qwen3", "Qwen3-Coder.jinja")
];

export const syntheticModelSpecs: readonly SyntheticModelSpec[] = [
    mapleTiny, qwen3Tiny, maplePreview, qwen3_0_6b, qwen3EmbeddingTiny, qwen3Embedding0_6b, ...formatTwins
];

export function findSyntheticModelSpec(name: string): SyntheticModelSpec | undefined {
    return syntheticModelSpecs.find((spec) => spec.name === name);
}

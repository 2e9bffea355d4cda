import type { GrammarJsonSchema } from "../grammar/jsonSchemaSubset.js";

/**
 * The engine interface: everything the rest of Maple knows about the model runtime. Only
 * `src/engine/` imports node-llama-cpp; a different backend would implement this interface.
 */

export interface ModelInfo {
    /** Absolute path of the GGUF file. */
    path: string;
    /** GGUF `general.architecture`, e.g. "maple" or "qwen3". */
    architecture: string;
    /** GGUF `general.name`, when set. */
    name: string | undefined;
    /** True for Maple's own random-weight models (GGUF key `general.synthetic`). */
    synthetic: boolean;
    fileSizeBytes: number;
    parameterCount: number | undefined;
    /** Weight types, largest share first, e.g. "Q8_0 + TQ2_0 (ternary experts)". */
    dtype: string;
    trainContextSize: number;
    /** The sliding attention window of its sliding-window layers (GGUF `ARCH.attention.sliding_window`), 0 when it has none. */
    slidingWindow: number;
    vocabularySize: number;
    /** The GGUF's `tokenizer.chat_template`, when it has one. */
    chatTemplate: string | undefined;
    bosToken: string;
    eosToken: string;
}

export interface RuntimeInfo {
    /** The llama.cpp build that runs the model: "cpu", "cuda", "vulkan" or "metal" (MAPLE_GPU, chooseBackend). */
    device: string;
    /** The GPU build's devices, e.g. ["NVIDIA GeForce RTX 4090"]; empty on the CPU, or when the GPU build found none. */
    deviceNames: readonly string[];
    /** Why this backend (chooseBackend's reason: the setting, or what "auto" passed over). */
    deviceReason: string;
    /** Layers offloaded to the GPU (llama.cpp's n_gpu_layers; 0 on the CPU) out of `modelLayers` (the blocks and the output layer). */
    gpuLayers: number;
    modelLayers: number;
    threads: number;
    /** Context window of each slot, in tokens. */
    contextSize: number;
    slots: number;
    batchSize: number;
    attention: string;
    loadSeconds: number;
    /** Bytes of one slot's KV cache as allocated (see kvCacheBytes), with the sliding-window cache in use. */
    kvBytesPerSlot: number;
    /** One slot with the full sliding-window cache (every layer holds every token), and with the windowed one. */
    kvBytesPerSlotFull: number;
    kvBytesPerSlotWindowed: number;
    /** How sliding-window layers keep their cells: "none" without such layers; "windowed" unless MAPLE_SWA_FULL. */
    slidingWindowCache: "none" | "full" | "windowed";
    /** Why each slot got `contextSize` tokens (the training context that fits, the largest that fits, or --context-size). */
    contextReason: string;
    /** The most a slot's context checkpoints hold (counted inside the host-memory prompt cache's bound). */
    checkpointBytesPerSlot: number;
    engineVersion: string;
    /**
     * What computes the tokens, beyond the version: the llama.cpp release, whether its binary was
     * prebuilt or built here, and the device (part of the responses' `system_fingerprint`).
     */
    engineBuild: string;
    /**
     * Whether tokens are sampled inside llama.cpp's decode job (node-llama-cpp's addon as rebuilt
     * by scripts/patch-node-llama-cpp.js), or in a second native job per token (the prebuilt addon).
     */
    samplingInDecode: boolean;
    /** How the weights reached llama.cpp: copied into RAM (huge pages) or mapped from the file, and why (chooseWeightsLoad). */
    weights: "ram" | "mmap";
    weightsReason: string;
}

/** A compiled GBNF grammar; each generation gets its own evaluation state from it. */
export interface EngineGrammar {
    readonly source: string;
}

/**
 * Chooses, before each token is sampled, the grammar that constrains it (undefined: sampled
 * freely). Each distinct grammar returned gets one evaluation state per generation, created the
 * first time it is returned and fed only the tokens sampled while it is returned; so returning
 * undefined for a while and then a grammar not returned before starts that grammar afresh.
 * Called on the generating path once per token: it must be cheap and must not throw.
 */
export type GrammarSelector = () => EngineGrammar | undefined;

/** A schema in the JSON-schema-to-grammar converter's subset (see `toGrammarSchema` in grammar/jsonSchemaSubset.ts). */
export type { GrammarJsonSchema };

export interface SamplingOptions {
    /** 0 is greedy. */
    temperature: number;
    topP: number;
    topK: number;
    minP?: number;
    seed?: number;
    /** Multiplicative penalty on recently seen tokens (llama.cpp's repeat_penalty); 1 disables. */
    repetitionPenalty?: number;
    presencePenalty?: number;
    frequencyPenalty?: number;
    grammar?: EngineGrammar;
    /**
     * Added to the logits of these token ids before sampling (OpenAI's `logit_bias`);
     * `-Infinity` bans a token. A bias on an end-of-generation token is ignored (node-llama-cpp
     * never biases those).
     */
    logitBias?: ReadonlyMap<number, number>;
    /** Never sample an end-of-generation token (llama-server's and vLLM's `ignore_eos`; for benchmarks). */
    ignoreEos?: boolean;
}

export interface GenerationRequest {
    promptTokens: readonly number[];
    sampling: SamplingOptions;
    /** Generation stops after this many tokens (or at the end of the slot's context). */
    maxTokens: number;
    signal: AbortSignal;
    /** Chooses the grammar of each token (answer-only constraints); takes precedence over `sampling.grammar`. */
    grammar?: GrammarSelector;
    /**
     * Report each generated token's log-probability, and the `top` (0–20) most likely tokens at
     * its position. The probabilities are those of the distribution the token was drawn from:
     * after logit bias, penalties, grammar, top-k/top-p/min-p and temperature (at temperature 0,
     * the whole vocabulary's). Costs a full-vocabulary sort and copy per token at temperature 0.
     */
    logprobs?: { top: number };
    /** The conversation this request continues (prompt_cache_key, user or X-Session-Id): saved states are tagged with it. */
    cacheKey?: string;
    /**
     * How many leading prompt tokens the conversation's next request will repeat (a chat prompt on
     * a sliding-window model, see nextTurnSharedCharacters): where its slot's state is saved.
     */
    nextTurnPrefix?: number;
    /**
     * Inside a tool loop, where `nextTurnPrefix` is where the loop's next tool result leaves the
     * prompt: how many leading tokens the user's next message will repeat (where the loop began).
     * The conversation's saved state there is kept while the loop's later states are saved, and
     * the slot's checkpoint there too.
     */
    loopStartPrefix?: number;
    /**
     * How many leading prompt tokens are a preamble other sessions start with too: the system or
     * developer messages and the tools, before the first user turn (see preambleCharacters). With
     * a prompt cache, the state where it ends is saved (once per distinct preamble) as the prompt
     * is evaluated, so a later session restores it and evaluates only its own part.
     */
    preambleTokens?: number;
}

/**
 * A token id's log-probability (natural log), as `GeneratedToken` reports it; the core's
 * TokenLogprob (core/parts.ts) adds the token's text and bytes to it.
 */
export interface TokenIdLogprob {
    token: number;
    logprob: number;
}

/** One generated token, with its log-probabilities when the request asked for them. */
export interface GeneratedToken {
    token: number;
    /** With `GenerationRequest.logprobs`: this token's log-probability. */
    logprob?: number;
    /**
     * With `logprobs.top > 0`: the most likely tokens at this position, most likely first, at
     * most `top` of them; tokens the sampler ruled out (probability 0) are left out.
     */
    topLogprobs?: readonly TokenIdLogprob[];
}

export type GenerationEnd =
    /** The model emitted an end-of-generation token (reported as `matched_stop`); a complete grammar ends this way too. */
    | { reason: "eog"; token: number }
    /** maxTokens reached. */
    | { reason: "length" }
    /** The slot's context is full. */
    | { reason: "context" };

export interface GenerationStream {
    /** Prompt tokens not evaluated again: reused from the slot's cache or restored from a saved state. */
    readonly cachedPromptTokens: number;
    /** Generated tokens, one at a time; the end-of-generation token is not yielded. */
    tokens(): AsyncGenerator<GeneratedToken, GenerationEnd, void>;
}

export type PromptCacheTier = "ram" | "disk";

/** Cumulative counts of the prompt cache (saved slot states), for /metrics. */
export interface PromptCacheReport {
    saves: Record<PromptCacheTier, number>;
    restores: Record<PromptCacheTier, number>;
    restoredTokens: number;
    evictions: Record<PromptCacheTier, number>;
    /** Of the saves and restores, those of a shared preamble's state (see GenerationRequest.preambleTokens). */
    preambleSaves: Record<PromptCacheTier, number>;
    preambleRestores: Record<PromptCacheTier, number>;
    /** Entries found unusable (another model's, corrupted, refused by llama.cpp), never loaded. */
    ignored: Record<PromptCacheTier, number>;
    bytes: Record<PromptCacheTier, number>;
    limitBytes: Record<PromptCacheTier, number>;
    /** Restores since the last call, each reported once: its own seconds, and its wait for the context. */
    takeRestoreSeconds(): { seconds: number; waitSeconds: number }[];
    /** What the save rule weighs now (docs/prompt-cache-design.md, "When a save pays"). */
    saveRule: {
        /** Saving a token costs this share of evaluating it again, as measured. */
        saveToPrefillRatio: number;
        /** The share of slots' states that were wanted again after their slots were reused. */
        returnShare: number;
    };
}

export interface Engine {
    readonly model: ModelInfo;
    readonly runtime: RuntimeInfo;
    /**
     * `specialTokens`: text such as `<|im_start|>` becomes its special token (default false).
     * `addBos`: prepend the model's BOS token when its tokenizer wants one and the text lacks it.
     */
    tokenize(text: string, options?: { specialTokens?: boolean; addBos?: boolean }): number[];
    /**
     * Decodes tokens; incomplete UTF-8 at either end comes out as U+FFFD. `previousTokens` (the
     * tokens just before) lets tokenizers that mark word starts decide a leading space correctly.
     */
    detokenize(tokens: readonly number[], previousTokens?: readonly number[]): string;
    isValidToken(token: number): boolean;
    /**
     * One token's text and exact bytes (for logprobs): a token that holds part of a UTF-8
     * character has U+FFFD in its text, and its raw bytes in `bytes`.
     */
    tokenPiece(token: number): { text: string; bytes: number[] };
    /** Throws InvalidGrammarError for a grammar that does not parse. Compiled grammars are cached by their text. */
    createGrammar(gbnf: string): Promise<EngineGrammar>;
    /**
     * GBNF rules defining `maple-json` (and helper rules whose names never start with `maple-`):
     * exactly one JSON value matching `schema`, or any JSON object when `schema` is undefined.
     */
    jsonGrammarRules(schema: GrammarJsonSchema | undefined): Promise<string>;
    /**
     * n > 1, one prefill for all choices: evaluates `promptTokens` but its last token in slot
     * `source` (reusing what that slot caches) and copies that state into each of `targets`, so
     * each slot's generation has only the last prompt token left to evaluate. A slot whose copy
     * fails is left empty and evaluates the prompt itself. Returns how many prompt tokens `source`
     * had cached before (the request's cached tokens). `nextTurnPrefix`, `preambleTokens`, `loopStartPrefix`: as GenerationRequest's.
     */
    sharePrompt(source: number, targets: readonly number[], promptTokens: readonly number[], cacheKey?: string, nextTurnPrefix?: number,
        preambleTokens?: number, loopStartPrefix?: number): Promise<number>;
    /**
     * The slot of `freeSlots` (least recently used first, at least one) that `promptTokens` should
     * go to: the prompt-cache policy's choice (see SlotCachePolicy). An empty prompt asks for the
     * slot cheapest to lose.
     */
    chooseSlot(freeSlots: readonly number[], promptTokens: readonly number[], cacheKey: string | undefined): number;
    /** The prompt cache's counters and sizes, when it is on. */
    promptCacheReport(): PromptCacheReport | undefined;
    /**
     * KV cells slot `slot` holds now: one per token its sequence has evaluated (a decode still
     * running counts once it returns). Each slot has `runtime.contextSize` cells of its own.
     */
    slotKvCells(slot: number): number;
    /** Starts generating in slot `slot` (0 ≤ slot < runtime.slots); the caller owns the slot until the stream ends. */
    generateOnSlot(slot: number, request: GenerationRequest): Promise<GenerationStream>;
    dispose(): Promise<void>;
}

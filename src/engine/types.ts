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
    vocabularySize: number;
    /** The GGUF's `tokenizer.chat_template`, when it has one. */
    chatTemplate: string | undefined;
    bosToken: string;
    eosToken: string;
}

export interface RuntimeInfo {
    /** "cpu", "cuda", "vulkan" or "metal". */
    device: string;
    threads: number;
    /** Context window of each slot, in tokens. */
    contextSize: number;
    slots: number;
    batchSize: number;
    attention: string;
    loadSeconds: number;
    engineVersion: string;
}

/** A compiled GBNF grammar; each generation gets its own evaluation state from it. */
export interface EngineGrammar {
    readonly source: string;
}

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
    /** Never sample an end-of-generation token (llama-server's and vLLM's `ignore_eos`; for benchmarks). */
    ignoreEos?: boolean;
}

export interface GenerationRequest {
    promptTokens: readonly number[];
    sampling: SamplingOptions;
    /** Generation stops after this many tokens (or at the end of the slot's context). */
    maxTokens: number;
    signal: AbortSignal;
}

export type GenerationEnd =
    /** The model emitted an end-of-generation token (reported as `matched_stop`); a complete grammar ends this way too. */
    | { reason: "eog"; token: number }
    /** maxTokens reached. */
    | { reason: "length" }
    /** The slot's context is full. */
    | { reason: "context" };

export interface GenerationStream {
    /** Prompt tokens reused from the slot's cache rather than evaluated again. */
    readonly cachedPromptTokens: number;
    /** Generated tokens, one at a time; the end-of-generation token is not yielded. */
    tokens(): AsyncGenerator<number, GenerationEnd, void>;
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
    /** Throws InvalidRequestError (param "grammar") for a grammar that does not parse. */
    createGrammar(gbnf: string): Promise<EngineGrammar>;
    /** How many leading tokens of `promptTokens` slot `slot` already holds (for prefix-cache routing). */
    cachedPrefixLength(slot: number, promptTokens: readonly number[]): number;
    /** Starts generating in slot `slot` (0 ≤ slot < runtime.slots); the caller owns the slot until the stream ends. */
    startGeneration(slot: number, request: GenerationRequest): Promise<GenerationStream>;
    dispose(): Promise<void>;
}

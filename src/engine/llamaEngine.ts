import { stat } from "node:fs/promises";
import { readFileSync } from "node:fs";
import {
    getLlama, GgmlType, LlamaGrammarEvaluationState, LlamaLogLevel, TokenBias,
    type Llama, type LlamaContext, type LlamaGrammar, type LlamaContextSequence, type LlamaModel, type Token
} from "node-llama-cpp";
import { InvalidGrammarError } from "../errors.js";
import type {
    Engine, EngineGrammar, GeneratedToken, GenerationEnd, GenerationRequest, GenerationStream, GrammarJsonSchema, ModelInfo,
    RuntimeInfo, SamplingOptions, TokenLogprob
} from "./types.js";
import { StepBarrier } from "./stepBarrier.js";
import { describeWeightTypes } from "./weightTypes.js";
import { anyObjectGrammarRules, schemaGrammarRules } from "../grammar/jsonGrammarRules.js";
import { copySequenceState } from "./sequenceStateCopy.js";
import { vocabularyPieceBytes } from "./tokenBytes.js";

export interface LlamaEngineOptions {
    modelPath: string;
    /** llama.cpp threads; never more than the cores the process may use (see README). */
    threads: number;
    /** Context window of each slot, in tokens; capped at the model's training context. */
    contextSize: number;
    /** Sequences that generate at once in the one llama.cpp context. */
    slots: number;
    batchSize: number;
    /** "auto" picks a GPU build when one loads, else the CPU. */
    gpu?: "auto" | false;
    onLoadProgress?: (fraction: number) => void;
    signal?: AbortSignal;
    /** llama.cpp's own log lines (warnings and errors only). */
    onLog?: (level: "warn" | "error", message: string) => void;
}

/**
 * Whether `npm install` applied scripts/patch-node-llama-cpp.js (it runs as our postinstall).
 * Without it a sampling error inside a decode batch is unhandled and ends the process.
 */
const samplingErrorPatchApplied: boolean = readFileSync(
    new URL("evaluator/LlamaContext/LlamaContext.js", import.meta.resolve("node-llama-cpp")), "utf8"
).includes("maple-patch: per-sequence sampling errors");

/** node-llama-cpp's package.json is not in its exports map: read it beside its entry point (dist/index.js). */
const engineVersion: string = (JSON.parse(readFileSync(new URL("../package.json", import.meta.resolve("node-llama-cpp")), "utf8")) as { version: string }).version;

class CompiledGrammar implements EngineGrammar {
    constructor(readonly source: string, readonly grammar: LlamaGrammar) {}
}

/** Compiled grammars kept for reuse (clients tend to send the same schema or grammar every time). */
const grammarCacheSize = 64;

/** What `evaluateWithMetadata` yields, whichever metadata was asked for. */
interface EvaluationOutput {
    token: Token;
    confidence?: number;
    probabilities?: Map<Token, number>;
}

/** vLLM's stand-in for the log of a zero probability, which JSON cannot carry as -Infinity. */
const minLogprob = -9999;

/** Loads a GGUF model into llama.cpp through node-llama-cpp and runs generations on its slots. */
export async function loadLlamaEngine(options: LlamaEngineOptions): Promise<Engine> {
    const startedAt = performance.now();
    if (!samplingErrorPatchApplied) {
        options.onLog?.("warn", "node-llama-cpp is not patched (was npm install run with --ignore-scripts?): run `node scripts/patch-node-llama-cpp.js`; "
            + "without it a sampling error (e.g. a grammar that logit_bias leaves unsatisfiable) ends the process");
    }
    const llama = await getLlama({
        gpu: options.gpu ?? "auto",
        build: "never",
        progressLogs: false,
        maxThreads: options.threads,
        logLevel: LlamaLogLevel.warn,
        logger: (level, message) => {
            const text = message.trim();
            if (text === "" || options.onLog === undefined) return;
            if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) options.onLog("error", text);
            else if (level === LlamaLogLevel.warn) options.onLog("warn", text);
        }
    });
    const model = await llama.loadModel({
        modelPath: options.modelPath,
        gpuLayers: llama.gpu === false ? 0 : "auto",
        onLoadProgress: options.onLoadProgress,
        loadSignal: options.signal
    });
    try {
        const slotContextSize = Math.min(options.contextSize, model.trainContextSize || options.contextSize);
        const context = await model.createContext({
            sequences: options.slots,
            // node-llama-cpp's contextSize is per sequence: each slot gets its own window.
            contextSize: slotContextSize,
            batchSize: Math.min(options.batchSize, slotContextSize * options.slots),
            threads: { ideal: options.threads, min: options.threads },
            // Prefix reuse needs the whole KV history of sliding-window layers too.
            swaFullCache: true,
            // llama.cpp's own tools default to flash attention where supported (llama-bench: auto);
            // node-llama-cpp defaults it off, which cost prefill speed (measured on maple-preview).
            flashAttention: model.flashAttentionSupported,
            createSignal: options.signal
        });
        const sequences = Array.from({ length: options.slots }, () => context.getSequence());
        const loadSeconds = (performance.now() - startedAt) / 1000;
        return new LlamaEngine(llama, model, context, sequences, new StepBarrier(), await describeModel(model, options.modelPath), {
            device: llama.gpu === false ? "cpu" : llama.gpu,
            threads: options.threads,
            contextSize: sequences[0]?.contextSize ?? slotContextSize,
            slots: options.slots,
            batchSize: context.batchSize,
            attention: context.flashAttention === true ? "flash attention (llama.cpp)" : "standard attention (llama.cpp)",
            loadSeconds: Math.round(loadSeconds * 100) / 100,
            engineVersion: `node-llama-cpp ${engineVersion}`
        });
    } catch (error) {
        await model.dispose();
        throw error;
    }
}

async function describeModel(model: LlamaModel, path: string): Promise<ModelInfo> {
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
        dtype: describeWeightTypes(tensors.map((tensor) => ({
            name: tensor.name, type: GgmlType[tensor.ggmlType] ?? String(tensor.ggmlType),
            elements: tensor.dimensions.reduce<number>((product, size) => product * Number(size), 1)
        }))),
        trainContextSize: model.trainContextSize,
        vocabularySize,
        chatTemplate: metadata.tokenizer?.chat_template,
        bosToken: model.tokens.bosString ?? "",
        eosToken: model.tokens.eosString ?? ""
    };
}

class LlamaEngine implements Engine {
    constructor(
        private readonly llama: Llama,
        private readonly llamaModel: LlamaModel,
        private readonly context: LlamaContext,
        private readonly sequences: LlamaContextSequence[],
        private readonly barrier: StepBarrier,
        readonly model: ModelInfo,
        readonly runtime: RuntimeInfo
    ) {}

    tokenize(text: string, options: { specialTokens?: boolean; addBos?: boolean } = {}): number[] {
        const tokens = this.llamaModel.tokenize(text, options.specialTokens ?? false);
        const bos = this.llamaModel.tokens.bos;
        if (options.addBos === true && bos !== null && this.llamaModel.tokens.shouldPrependBosToken && tokens[0] !== bos) {
            return [bos, ...tokens];
        }
        return tokens;
    }

    detokenize(tokens: readonly number[], previousTokens?: readonly number[]): string {
        return this.llamaModel.detokenize(tokens as Token[], false, previousTokens as Token[] | undefined);
    }

    isValidToken(token: number): boolean {
        return Number.isInteger(token) && token >= 0 && token < this.model.vocabularySize;
    }

    private readonly grammars = new Map<string, CompiledGrammar>();

    async createGrammar(gbnf: string): Promise<EngineGrammar> {
        const cached = this.grammars.get(gbnf);
        if (cached !== undefined) {
            // Most recently used last: the first entry is the one to evict.
            this.grammars.delete(gbnf);
            this.grammars.set(gbnf, cached);
            return cached;
        }
        let compiled: CompiledGrammar;
        try {
            compiled = new CompiledGrammar(gbnf, await this.llama.createGrammar({ grammar: gbnf }));
        } catch (error) {
            throw new InvalidGrammarError((error as Error).message);
        }
        this.grammars.set(gbnf, compiled);
        if (this.grammars.size > grammarCacheSize) this.grammars.delete(this.grammars.keys().next().value!);
        return compiled;
    }

    private readonly jsonRules = new Map<string, string>();

    async jsonGrammarRules(schema: GrammarJsonSchema | undefined): Promise<string> {
        const key = JSON.stringify(schema ?? null);
        let rules = this.jsonRules.get(key);
        if (rules === undefined) {
            if (schema === undefined) rules = anyObjectGrammarRules((await this.llama.getGrammarFor("json")).grammar);
            else {
                // The converter's schema type is a generic tree of its own keywords, which GrammarJsonSchema holds.
                const grammar = await this.llama.createGrammarForJsonSchema(schema as unknown as Parameters<Llama["createGrammarForJsonSchema"]>[0]);
                rules = schemaGrammarRules(grammar.grammar);
            }
            this.jsonRules.set(key, rules);
            if (this.jsonRules.size > grammarCacheSize) this.jsonRules.delete(this.jsonRules.keys().next().value!);
        }
        return rules;
    }

    tokenPiece(token: number): { text: string; bytes: number[] } {
        // Special tokens (<|im_end|>) show as their text, as llama-server and vLLM show them.
        const text = this.llamaModel.detokenize([token as Token], true);
        if (!text.includes("\uFFFD")) return { text, bytes: [...Buffer.from(text, "utf8")] };
        const metadata = this.llamaModel.fileInfo.metadata as unknown as { tokenizer?: { ggml?: { tokens?: readonly string[] } } };
        const piece = metadata.tokenizer?.ggml?.tokens?.[token];
        const bytes = piece === undefined ? undefined : vocabularyPieceBytes(piece, this.llamaModel.vocabularyType);
        return { text, bytes: bytes ?? [...Buffer.from(text, "utf8")] };
    }

    async sharePrompt(source: number, targets: readonly number[], promptTokens: readonly number[]): Promise<number> {
        const sequence = this.slotSequence(source);
        const prompt = promptTokens as Token[];
        const cached = await reusePrefix(sequence, prompt, this.barrier);
        // The last prompt token is each generation's own first step: its logits are sampled.
        const shared = prompt.length - 1;
        if (shared > cached) await sequence.evaluateWithoutGeneratingNewTokens(prompt.slice(cached, shared));
        for (const target of targets) {
            const targetSequence = this.slotSequence(target);
            // Already holds it (the same prompt again): its generation erases whatever follows.
            if (sharedPrefixLength(targetSequence.contextTokens, prompt, shared) === shared) continue;
            await this.barrier.exclusive(() => copySequenceState(targetSequence, sequence, shared));
        }
        return cached;
    }

    private slotSequence(slot: number): LlamaContextSequence {
        const sequence = this.sequences[slot];
        if (sequence === undefined) throw new RangeError(`no slot ${slot}`);
        return sequence;
    }

    cachedPrefixLength(slot: number, promptTokens: readonly number[]): number {
        return sharedPrefixLength(this.sequences[slot]?.contextTokens ?? [], promptTokens, promptTokens.length);
    }

    async startGeneration(slot: number, request: GenerationRequest): Promise<GenerationStream> {
        const sequence = this.sequences[slot];
        if (sequence === undefined) throw new RangeError(`no slot ${slot}`);
        const prompt = request.promptTokens as Token[];
        const cachedPromptTokens = await reusePrefix(sequence, prompt, this.barrier);
        const generation = this.generate(slot, sequence, prompt, cachedPromptTokens, request);
        return { cachedPromptTokens, tokens: () => generation };
    }

    /** Generates in `sequence`, which holds the first `cached` tokens of `prompt` already. */
    private async *generate(slot: number, sequence: LlamaContextSequence, prompt: Token[], cached: number,
        request: GenerationRequest): AsyncGenerator<GeneratedToken, GenerationEnd, void> {
        const input = prompt.slice(cached);
        const { sampling, signal } = request;
        const grammarEvaluationState = this.grammarEvaluation(request);
        const tokenBias = this.tokenBias(sampling);
        // Probabilities only when asked for: at temperature 0 they are a full-vocabulary sort and copy per token.
        const metadata = request.logprobs === undefined ? {} : { confidence: true, probabilities: request.logprobs.top > 0 };
        const penalties = sampling.repetitionPenalty !== undefined || sampling.presencePenalty || sampling.frequencyPenalty;
        const penaltyWindow = penalties ? new PenaltyWindow(prompt.slice(Math.max(0, cached - penaltyWindowSize), cached), input) : undefined;
        const evaluation = sequence.evaluateWithMetadata(input, metadata, {
            temperature: sampling.temperature,
            topK: sampling.topK,
            topP: sampling.topP,
            minP: sampling.minP,
            seed: sampling.seed ?? randomSeed(),
            grammarEvaluationState,
            tokenBias,
            repeatPenalty: penaltyWindow !== undefined
                ? {
                    punishTokens: () => penaltyWindow.tokens,
                    penalty: sampling.repetitionPenalty ?? 1,
                    presencePenalty: sampling.presencePenalty ?? 0,
                    frequencyPenalty: sampling.frequencyPenalty ?? 0
                }
                : undefined,
            yieldEogToken: true,
            contextShift: { strategy: "eraseBeginning", size: 0 }
        });
        let generated = 0;
        let prefilled = false;
        this.barrier.join();
        try {
            if (request.maxTokens <= 0) return { reason: "length" };
            for (;;) {
                // Slot i is sequence i: the sequences were taken from the context in order.
                await this.barrier.arrive(slot);
                // The first step evaluates the (uncached part of the) prompt.
                const step = prefilled ? await this.barrier.step(() => evaluation.next()) : await this.barrier.prefill(() => evaluation.next());
                prefilled = true;
                if (step.done) break;
                const output = step.value as EvaluationOutput;
                const token = output.token;
                if (signal.aborted) break;
                if (this.llamaModel.isEogToken(token)) return { reason: "eog", token };
                penaltyWindow?.decoding(token);
                yield request.logprobs === undefined ? { token } : withLogprobs(output, request.logprobs.top);
                generated += 1;
                if (generated >= request.maxTokens) return { reason: "length" };
                // The sampled token still has to be evaluated: stop while it fits in the slot.
                if (sequence.nextTokenIndex + 1 >= sequence.contextSize) return { reason: "context" };
            }
            // node-llama-cpp ends the evaluation itself only when the context cannot take another token.
            return signal.aborted ? { reason: "length" } : { reason: "context" };
        } finally {
            this.barrier.leave();
            await evaluation.return();
        }
    }

    /** The request's grammar: one state for `sampling.grammar`, or a state per grammar its selector returns. */
    private grammarEvaluation(request: GenerationRequest): LlamaGrammarEvaluationState | (() => LlamaGrammarEvaluationState | undefined) | undefined {
        const select = request.grammar;
        if (select === undefined) {
            const grammar = request.sampling.grammar;
            return grammar instanceof CompiledGrammar ? new LlamaGrammarEvaluationState({ model: this.llamaModel, grammar: grammar.grammar }) : undefined;
        }
        // node-llama-cpp (3.22.1) calls this before sampling each token and feeds the sampled
        // token only to the state returned for it (AddonSampler::acceptToken).
        const states = new Map<EngineGrammar, LlamaGrammarEvaluationState>();
        return () => {
            const grammar = select();
            if (!(grammar instanceof CompiledGrammar)) return undefined;
            let state = states.get(grammar);
            if (state === undefined) {
                state = new LlamaGrammarEvaluationState({ model: this.llamaModel, grammar: grammar.grammar });
                states.set(grammar, state);
            }
            return state;
        };
    }

    /** `logit_bias` as a logit offset (−Infinity bans), plus `ignore_eos`. */
    private tokenBias(sampling: SamplingOptions): TokenBias | undefined {
        const logitBias = sampling.logitBias ?? new Map<number, number>();
        const ignoreEos = sampling.ignoreEos === true;
        if (logitBias.size === 0) {
            if (!ignoreEos) return undefined;
            this.eogBias ??= this.biasFor(logitBias, true);
            return this.eogBias;
        }
        return this.biasFor(logitBias, ignoreEos);
    }

    private eogBias: TokenBias | undefined;
    private eogTokens: Token[] | undefined;

    /**
     * A TokenBias written through its internal map (node-llama-cpp 3.22.1): its public `set()`
     * silently skips end-of-generation tokens, which would make `ignore_eos` and a `logit_bias` on
     * an EOG token do nothing. The sampler applies every entry of the map.
     */
    private biasFor(logitBias: ReadonlyMap<number, number>, banEndOfGeneration: boolean): TokenBias {
        const bias = new TokenBias(this.llamaModel.tokenizer);
        const entries = (bias as unknown as { _biases: Map<Token, number> })._biases;
        for (const [token, logit] of logitBias) entries.set(token as Token, logit);
        if (banEndOfGeneration) {
            // The vocabulary is scanned once, on first use (~20 ms for 152k tokens).
            this.eogTokens ??= Array.from({ length: this.model.vocabularySize }, (_, token) => token as Token)
                .filter((token) => this.llamaModel.isEogToken(token));
            for (const token of this.eogTokens) entries.set(token, Number.NEGATIVE_INFINITY);
        }
        return bias;
    }

    async dispose(): Promise<void> {
        await this.context.dispose();
        await this.llamaModel.dispose();
    }
}

/** llama.cpp's penalty window: the last 64 tokens (repeat_last_n). */
const penaltyWindowSize = 64;

/**
 * The tokens penalties look at, kept up to date token by token. node-llama-cpp reads them when it
 * samples, which is inside the decode of the step's batch: the sequence then holds what was
 * decoded before that batch (at the first token, the cached prefix; at the next, the whole
 * prompt; then each token one step late), and that is what this window holds. Reading the
 * sequence's `contextTokens` instead copied the whole context at every token.
 */
class PenaltyWindow {
    /** At most the last `penaltyWindowSize` tokens the sequence holds. */
    private held: Token[];
    /** The batch being decoded while the next token is sampled: the prompt's uncached part, then each sampled token. */
    private batch: readonly Token[];

    constructor(held: readonly Token[], input: readonly Token[]) {
        this.held = held.slice(-penaltyWindowSize);
        this.batch = input;
    }

    get tokens(): Token[] {
        return this.held;
    }

    /** `token` was sampled: the batch before it is now in the sequence, and `token` is decoded next. */
    decoding(token: Token): void {
        this.held = this.held.concat(this.batch.slice(-penaltyWindowSize)).slice(-penaltyWindowSize);
        this.batch = [token];
    }
}

/**
 * Keeps the longest prefix the slot already holds and erases the rest. At least one prompt token
 * is always evaluated again, since sampling needs the logits of the prompt's last position.
 */
async function reusePrefix(sequence: LlamaContextSequence, prompt: Token[], barrier: StepBarrier): Promise<number> {
    const shared = sharedPrefixLength(sequence.contextTokens, prompt, prompt.length - 1);
    if (shared < sequence.nextTokenIndex) {
        const end = sequence.nextTokenIndex;
        await barrier.exclusive(() => sequence.eraseContextTokenRanges([{ start: shared, end }]));
    }
    // The engine falls back to a full re-evaluation when the KV cells could not be removed.
    return Math.min(shared, sequence.nextTokenIndex);
}

function sharedPrefixLength(cached: readonly number[], prompt: readonly number[], limit: number): number {
    const end = Math.min(cached.length, limit);
    let shared = 0;
    while (shared < end && cached[shared] === prompt[shared]) shared += 1;
    return shared;
}

/** A sampled token with its log-probability and, when `top` > 0, the most likely alternatives. */
function withLogprobs(output: EvaluationOutput, top: number): GeneratedToken {
    const probability = output.confidence ?? output.probabilities?.get(output.token) ?? 0;
    const generated: GeneratedToken = { token: output.token, logprob: toLogprob(probability) };
    if (top > 0 && output.probabilities !== undefined) {
        // node-llama-cpp returns the map most likely first.
        const best: TokenLogprob[] = [];
        for (const [token, p] of output.probabilities) {
            if (best.length >= top || p <= 0) break;
            best.push({ token, logprob: toLogprob(p) });
        }
        generated.topLogprobs = best;
    }
    return generated;
}

function toLogprob(probability: number): number {
    return probability > 0 ? Math.max(Math.log(probability), minLogprob) : minLogprob;
}

function randomSeed(): number {
    return Math.floor(Math.random() * 0x7fffffff);
}

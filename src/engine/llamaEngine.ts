import { stat } from "node:fs/promises";
import { readFileSync } from "node:fs";
import {
    getLlama, GgmlType, LlamaGrammarEvaluationState, LlamaLogLevel, TokenBias,
    type Llama, type LlamaContext, type LlamaGrammar, type LlamaContextSequence, type LlamaModel, type Token
} from "node-llama-cpp";
import { InvalidGrammarError } from "../errors.js";
import type {
    Engine, EngineGrammar, GeneratedToken, GenerationEnd, GenerationRequest, GenerationStream, GrammarJsonSchema, ModelInfo,
    PromptCacheReport, RuntimeInfo, SamplingOptions, TokenLogprob
} from "./types.js";
import { StateCosts } from "./stateCosts.js";
import { StepBarrier } from "./stepBarrier.js";
import { describeWeightTypes } from "./weightTypes.js";
import { anyObjectGrammarRules, schemaGrammarRules } from "../grammar/jsonGrammarRules.js";
import { copySequenceState } from "./sequenceStateCopy.js";
import { dropUntrackedCells } from "./sequenceCells.js";
import { loadSequenceState, saveSequenceState } from "./sequenceStateFile.js";
import { modelIdentity } from "./promptCache/modelIdentity.js";
import { PromptCache, type CacheEntry, type PromptCacheEvent } from "./promptCache/promptCache.js";
import { sharedPrefixLength } from "./promptCache/cacheTier.js";
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
    /** Saved slot states beyond the slots (see docs/prompt-cache.md); none when absent. */
    promptCache?: PromptCacheSettings;
}

export interface PromptCacheSettings {
    /** Host-memory tier bound in bytes; 0 disables it. */
    ramBytes: number;
    /** Disk tier directory (survives restarts) and its bound in bytes. */
    diskDir?: string;
    diskBytes: number;
    /** Where the host-memory tier's files go (a tmpfs); default /dev/shm. */
    ramRoot?: string;
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
        const report = new CacheReport();
        const cache = options.promptCache === undefined ? undefined : await PromptCache.open({
            ...options.promptCache,
            identity: await modelIdentity(options.modelPath, {
                contextSize: sequences[0]?.contextSize ?? slotContextSize, flashAttention: context.flashAttention, swaFullCache: true, engineVersion
            }),
            maxTokens: sequences[0]?.contextSize ?? slotContextSize,
            slidingWindow: slidingWindowOf(model),
            onEvent: (event) => report.record(event)
        });
        const loadSeconds = (performance.now() - startedAt) / 1000;
        return new LlamaEngine(llama, model, context, sequences, new StepBarrier(), cache, report, await describeModel(model, options.modelPath), {
            device: llama.gpu === false ? "cpu" : llama.gpu,
            threads: options.threads,
            contextSize: sequences[0]?.contextSize ?? slotContextSize,
            slots: options.slots,
            batchSize: context.batchSize,
            attention: context.flashAttention === true ? "flash attention (llama.cpp)" : "standard attention (llama.cpp)",
            loadSeconds: Math.round(loadSeconds * 100) / 100,
            engineVersion: `node-llama-cpp ${engineVersion}`,
            engineBuild: `node-llama-cpp ${engineVersion}; llama.cpp ${llama.llamaCppRelease.repo} ${llama.llamaCppRelease.release} (${llama.buildType}); `
                + `${llama.gpu === false ? "cpu" : llama.gpu}`
        });
    } catch (error) {
        await model.dispose();
        throw error;
    }
}

/** The model's sliding attention window in tokens (GGUF `ARCH.attention.sliding_window`), 0 when it has none. */
function slidingWindowOf(model: LlamaModel): number {
    const metadata = model.fileInfo.metadata as unknown as Record<string, { attention?: { sliding_window?: number } } | undefined> & { general: { architecture: string } };
    return Number(metadata[metadata.general.architecture]?.attention?.sliding_window ?? 0);
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
        slidingWindow: slidingWindowOf(model),
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
        private readonly cache: PromptCache | undefined,
        private readonly cacheReport: CacheReport,
        readonly model: ModelInfo,
        readonly runtime: RuntimeInfo
    ) {
        this.slotMemory = sequences.map(() => ({ key: undefined, saved: undefined, turnPrefix: undefined }));
    }

    /**
     * Per slot: the conversation key it last served, the saved entry its leading tokens match, and
     * how many of the last prompt's tokens the conversation's next prompt will repeat.
     */
    private readonly slotMemory: { key: string | undefined; saved: CacheEntry | undefined; turnPrefix: number | undefined }[];
    private readonly costs = new StateCosts();

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

    async sharePrompt(source: number, targets: readonly number[], promptTokens: readonly number[], cacheKey?: string, nextTurnPrefix?: number): Promise<number> {
        const sequence = this.slotSequence(source);
        const prompt = promptTokens as Token[];
        const cached = await this.prepareSlot(source, prompt, cacheKey, nextTurnPrefix);
        // The last prompt token is each generation's own first step: its logits are sampled.
        const shared = prompt.length - 1;
        if (shared > cached) await sequence.evaluateWithoutGeneratingNewTokens(prompt.slice(cached, shared));
        for (const target of targets) {
            const targetSequence = this.slotSequence(target);
            // Already holds it (the same prompt again): its generation erases whatever follows.
            if (sharedPrefixLength(targetSequence.contextTokens, prompt, shared) === shared) continue;
            await this.barrier.exclusive(() => copySequenceState(targetSequence, sequence, shared));
            this.slotMemory[target] = { key: cacheKey, saved: undefined, turnPrefix: turnPrefixOf(prompt, nextTurnPrefix) };
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

    savedPrefixLength(promptTokens: readonly number[], cacheKey: string | undefined): number {
        return this.cache?.longestMatch(promptTokens, promptTokens.length, cacheKey)?.shared ?? 0;
    }

    reuseCost(slot: number, promptTokens: readonly number[]): number {
        const sequence = this.slotSequence(slot);
        const kept = Math.max(this.cachedPrefixLength(slot, promptTokens), this.savedLength(slot));
        const held = sequence.nextTokenIndex;
        const lost = Math.max(0, held - kept);
        // With a cache the tokens are saved rather than lost when that is cheaper: the cost is
        // then the save's, which writes the whole state.
        return this.cache === undefined ? lost : Math.min(lost, held * this.costs.saveToPrefillRatio(defaultSaveToPrefillRatio));
    }

    slotCacheKey(slot: number): string | undefined {
        return this.slotMemory[slot]?.key;
    }

    promptCacheReport(): PromptCacheReport | undefined {
        if (this.cache === undefined) return undefined;
        const { bytes, limits } = this.cache.stats();
        return this.cacheReport.snapshot(bytes, limits);
    }

    /** How many of the slot's leading tokens a saved entry still holds. */
    private savedLength(slot: number): number {
        const saved = this.slotMemory[slot]?.saved;
        if (saved === undefined || this.cache?.holds(saved) !== true) return 0;
        return sharedPrefixLength(this.slotSequence(slot).contextTokens, saved.tokens, saved.tokens.length);
    }

    /**
     * Readies a slot for a prompt and returns how many prompt tokens need no evaluation: saves
     * what the slot holds when most of it is about to be erased and no entry holds it yet,
     * restores the saved state sharing the longest prefix when it beats the slot's own, then
     * erases whatever follows the shared prefix.
     */
    private async prepareSlot(slot: number, prompt: Token[], cacheKey: string | undefined, nextTurnPrefix: number | undefined): Promise<number> {
        const sequence = this.slotSequence(slot);
        const memory = this.slotMemory[slot]!;
        const cache = this.cache;
        if (cache !== undefined) {
            const limit = prompt.length - 1;
            const kept = sharedPrefixLength(sequence.contextTokens, prompt, limit);
            const held = sequence.nextTokenIndex;
            // As llama-server: save a state only when most of it is about to go (a new turn of
            // the same conversation keeps most of it, and erases only what it does not need).
            // Started before anything is awaited, so that the request wanting it finds it pending.
            const worthSaving = this.worthSaving(held - this.savedLength(slot), held);
            let saving = worthSaving && kept < held / 2 ? this.saveSlot(slot, cache, kept) : undefined;
            await this.savesServing(prompt, kept + minimumRestoreGain, saving);
            const match = cache.longestMatch(prompt, limit, cacheKey);
            const restore = match !== undefined && match.shared >= kept + minimumRestoreGain ? match.entry : undefined;
            if (restore === undefined && limit - kept >= minimumSavedTokens) cache.noteMiss(prompt, limit);
            // A restore replaces what the slot holds: save it even when the prompt shared most of it.
            if (saving === undefined && restore !== undefined && worthSaving) saving = this.saveSlot(slot, cache, 0);
            await saving;
            if (restore !== undefined) {
                const restored = await cache.restore(restore, (file) => this.barrier.exclusive(() => loadSequenceState(sequence, file)));
                // A failed load empties the slot; a refused entry (bad checksum) leaves it as it was.
                if (restored) memory.saved = restore;
            }
        }
        memory.key = cacheKey;
        memory.turnPrefix = turnPrefixOf(prompt, nextTurnPrefix);
        return reusePrefix(sequence, prompt, this.barrier);
    }

    /**
     * Whether to save a slot holding `held` tokens, `unsaved` of them in no saved entry: when
     * evaluating those again would cost more than writing the whole state (as measured here), and
     * they are enough for a restore of the entry to be chosen over the older one.
     */
    private worthSaving(unsaved: number, held: number): boolean {
        return unsaved >= minimumRestoreGain && unsaved >= held * this.costs.saveToPrefillRatio(defaultSaveToPrefillRatio);
    }

    /**
     * Saves what the slot holds; its first `keep` tokens are all the slot's next use keeps. A
     * sliding-window model's entry serves only prompts that keep all but at most its last token
     * (see CacheTier), and a chat's next turn renders the reply otherwise than it was generated
     * (the reasoning dropped, no pre-filled `<think>`): so it saves the state where the next turn
     * leaves the last prompt (`turnPrefix`), and the whole state first only when enough was
     * generated after that point to be worth a second save.
     */
    private saveSlot(slot: number, cache: PromptCache, keep: number): Promise<void> {
        const tokens = this.slotSequence(slot).contextTokens;
        const saving: Promise<void> = this.saveSlotStates(slot, cache, keep).finally(() => this.pendingSaves.delete(saving));
        this.pendingSaves.set(saving, tokens);
        return saving;
    }

    /**
     * Saves in progress, with the tokens each holds. Requests arriving together take their slots
     * before the states those slots held are saved: the one whose own state is being saved waits
     * for it (a restore) rather than evaluating its prompt again (as llama-server, whose loop saves
     * and restores in turn).
     */
    private readonly pendingSaves = new Map<Promise<void>, readonly number[]>();

    /** Waits for the saves in progress (but `own`) that hold at least `worth` leading tokens of the prompt. */
    private async savesServing(prompt: readonly number[], worth: number, own: Promise<void> | undefined): Promise<void> {
        const serving = [...this.pendingSaves].filter(([saving, tokens]) => saving !== own && sharedPrefixLength(tokens, prompt, prompt.length - 1) >= worth);
        await Promise.all(serving.map(([saving]) => saving));
    }

    private async saveSlotStates(slot: number, cache: PromptCache, keep: number): Promise<void> {
        const sequence = this.slotSequence(slot);
        const memory = this.slotMemory[slot]!;
        const save = (): Promise<CacheEntry | undefined> =>
            cache.save(sequence.contextTokens, memory.key, (file) => this.barrier.exclusive(async () => {
                const startedAt = performance.now();
                const bytes = await saveSequenceState(sequence, file);
                this.costs.noteSave(sequence.nextTokenIndex, performance.now() - startedAt);
                return bytes;
            }));
        const held = sequence.nextTokenIndex;
        const turnStart = memory.turnPrefix ?? 0;
        const atTurnStart = this.model.slidingWindow > 0 && held > this.model.slidingWindow && turnStart >= minimumSavedTokens && turnStart >= keep && turnStart < held - 1;
        try {
            if (!atTurnStart || held - turnStart > minimumRestoreGain) memory.saved = await save();
            if (atTurnStart) {
                await this.barrier.exclusive(() => sequence.eraseContextTokenRanges([{ start: turnStart, end: held }]));
                memory.saved = await save();
            }
        } catch {
            // A save that fails (a full tmpfs) costs only the re-evaluation it would have spared.
            memory.saved = undefined;
        }
    }

    slotKvCells(slot: number): number {
        // node-llama-cpp has no public count of a sequence's KV cells; its evaluated-token count is
        // that number: one cell per position 0…n−1 (Maple erases only a slot's tail, and stops
        // before a context shift would be needed).
        return this.slotSequence(slot).nextTokenIndex;
    }

    async startGeneration(slot: number, request: GenerationRequest): Promise<GenerationStream> {
        const sequence = this.sequences[slot];
        if (sequence === undefined) throw new RangeError(`no slot ${slot}`);
        const prompt = request.promptTokens as Token[];
        const cachedPromptTokens = await this.prepareSlot(slot, prompt, request.cacheKey, request.nextTurnPrefix);
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
        let faulted = false;
        this.barrier.join();
        try {
            if (request.maxTokens <= 0) return { reason: "length" };
            for (;;) {
                // Slot i is sequence i: the sequences were taken from the context in order.
                await this.barrier.arrive(slot);
                // The first step evaluates the (uncached part of the) prompt.
                let step: IteratorResult<EvaluationOutput | undefined, void>;
                if (prefilled) step = await this.barrier.step(() => evaluation.next());
                else {
                    const prefillEnded = this.costs.startPrefill(input.length);
                    step = await this.barrier.prefill(() => evaluation.next()).finally(prefillEnded);
                    prefilled = true;
                }
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
        } catch (error) {
            faulted = true;
            throw error;
        } finally {
            this.barrier.leave();
            await evaluation.return();
            if (faulted) await this.barrier.exclusive(() => this.dropFaultedCells(sequence));
        }
    }

    /** After a failed decode the slot may hold KV cells its sequence does not count: remove them. */
    private async dropFaultedCells(sequence: LlamaContextSequence): Promise<void> {
        if (!dropUntrackedCells(sequence)) await sequence.clearHistory();
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
        // With a disk tier, what the slots hold outlives the process: a restart resumes it.
        if (this.cache?.disk !== undefined) {
            for (let slot = 0; slot < this.sequences.length; slot += 1) {
                if (this.slotSequence(slot).nextTokenIndex - this.savedLength(slot) >= minimumSavedTokens) await this.saveSlot(slot, this.cache, 0);
            }
        }
        await this.cache?.dispose();
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

/** A saved state is restored only when it spares at least this many more tokens than the slot's own prefix. */
const minimumRestoreGain = 16;
/** States with fewer unsaved tokens are not worth a save (re-evaluating them is about as quick). */
const minimumSavedTokens = 32;
/**
 * Where a conversation's next prompt leaves this one: as its template says when known (chat
 * requests), else llama-server's last context checkpoint, this many tokens before the end of the
 * prompt (server-context.cpp).
 */
function turnPrefixOf(prompt: readonly number[], nextTurnPrefix: number | undefined): number {
    return nextTurnPrefix === undefined ? prompt.length - turnCheckpointOffset : Math.max(0, Math.min(nextTurnPrefix, prompt.length));
}

const turnCheckpointOffset = 4;
/**
 * Saving a token's KV state costs about this share of evaluating it again, until both were
 * measured (see StateCosts): about what qwen3-0.6b measures on 2 CPU cores.
 */
const defaultSaveToPrefillRatio = 0.1;

/** The prompt cache's events, counted for /metrics. */
class CacheReport {
    private readonly counts = {
        saves: { ram: 0, disk: 0 }, restores: { ram: 0, disk: 0 }, evictions: { ram: 0, disk: 0 }, ignored: { ram: 0, disk: 0 }, restoredTokens: 0
    };
    private restoreSeconds: number[] = [];

    record(event: PromptCacheEvent): void {
        switch (event.kind) {
            case "save": this.counts.saves[event.tier] += 1; break;
            case "evict": this.counts.evictions[event.tier] += 1; break;
            case "ignore": this.counts.ignored[event.tier] += 1; break;
            case "restore":
                this.counts.restores[event.tier] += 1;
                this.counts.restoredTokens += event.tokens;
                // Bounded: a server nobody scrapes keeps only the latest.
                if (this.restoreSeconds.length < 10_000) this.restoreSeconds.push(event.seconds);
                break;
        }
    }

    snapshot(bytes: PromptCacheReport["bytes"], limitBytes: PromptCacheReport["limitBytes"]): PromptCacheReport {
        const counts = structuredClone(this.counts);
        return {
            ...counts, bytes, limitBytes,
            takeRestoreSeconds: () => {
                const taken = this.restoreSeconds;
                this.restoreSeconds = [];
                return taken;
            }
        };
    }
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

import { stat } from "node:fs/promises";
import { readFileSync } from "node:fs";
import {
    getLlama, GgmlType, LlamaGrammarEvaluationState, LlamaLogLevel, TokenBias,
    type Llama, type LlamaContext, type LlamaGrammar, type LlamaContextSequence, type LlamaModel, type Token
} from "node-llama-cpp";
import { InvalidRequestError } from "../errors.js";
import type {
    Engine, EngineGrammar, GenerationEnd, GenerationRequest, GenerationStream, ModelInfo, RuntimeInfo
} from "./types.js";
import { describeWeightTypes } from "./weightTypes.js";

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

/** node-llama-cpp's package.json is not in its exports map: read it beside its entry point (dist/index.js). */
const engineVersion: string = (JSON.parse(readFileSync(new URL("../package.json", import.meta.resolve("node-llama-cpp")), "utf8")) as { version: string }).version;

class CompiledGrammar implements EngineGrammar {
    constructor(readonly source: string, readonly grammar: LlamaGrammar) {}
}

/** Loads a GGUF model into llama.cpp through node-llama-cpp and runs generations on its slots. */
export async function loadLlamaEngine(options: LlamaEngineOptions): Promise<Engine> {
    const startedAt = performance.now();
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
    const lockstep = new LockstepDispatch();
    try {
        const slotContextSize = Math.min(options.contextSize, model.trainContextSize || options.contextSize);
        const context = await model.createContext({
            sequences: options.slots,
            // node-llama-cpp's contextSize is per sequence: each slot gets its own window.
            contextSize: slotContextSize,
            batchSize: Math.min(options.batchSize, slotContextSize * options.slots),
            batching: { dispatchSchedule: (dispatch) => lockstep.schedule(dispatch) },
            threads: { ideal: options.threads, min: options.threads },
            // Prefix reuse needs the whole KV history of sliding-window layers too.
            swaFullCache: true,
            createSignal: options.signal
        });
        const sequences = Array.from({ length: options.slots }, () => context.getSequence());
        const loadSeconds = (performance.now() - startedAt) / 1000;
        lockstep.attach(context);
        return new LlamaEngine(llama, model, context, sequences, lockstep, await describeModel(model, options.modelPath), {
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
        private readonly lockstep: LockstepDispatch,
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

    async createGrammar(gbnf: string): Promise<EngineGrammar> {
        try {
            return new CompiledGrammar(gbnf, await this.llama.createGrammar({ grammar: gbnf }));
        } catch (error) {
            throw new InvalidRequestError(`Invalid grammar: ${(error as Error).message}`, "grammar");
        }
    }

    cachedPrefixLength(slot: number, promptTokens: readonly number[]): number {
        return sharedPrefixLength(this.sequences[slot]?.contextTokens ?? [], promptTokens, promptTokens.length);
    }

    async startGeneration(slot: number, request: GenerationRequest): Promise<GenerationStream> {
        const sequence = this.sequences[slot];
        if (sequence === undefined) throw new RangeError(`no slot ${slot}`);
        const prompt = request.promptTokens as Token[];
        const cachedPromptTokens = await reusePrefix(sequence, prompt);
        const generation = this.generate(sequence, prompt.slice(cachedPromptTokens), request);
        return { cachedPromptTokens, tokens: () => generation };
    }

    private async *generate(sequence: LlamaContextSequence, input: Token[], request: GenerationRequest): AsyncGenerator<number, GenerationEnd, void> {
        const { sampling, signal } = request;
        const grammar = sampling.grammar instanceof CompiledGrammar
            ? new LlamaGrammarEvaluationState({ model: this.llamaModel, grammar: sampling.grammar.grammar })
            : undefined;
        const tokenBias = sampling.ignoreEos === true ? this.endOfGenerationBias() : undefined;
        const penalties = sampling.repetitionPenalty !== undefined || sampling.presencePenalty || sampling.frequencyPenalty;
        const evaluation = sequence.evaluate(input, {
            temperature: sampling.temperature,
            topK: sampling.topK,
            topP: sampling.topP,
            minP: sampling.minP,
            seed: sampling.seed ?? randomSeed(),
            grammarEvaluationState: grammar,
            tokenBias,
            // llama.cpp's penalty window: the last 64 tokens (repeat_last_n).
            repeatPenalty: penalties
                ? {
                    punishTokens: () => sequence.contextTokens.slice(-64),
                    penalty: sampling.repetitionPenalty ?? 1,
                    presencePenalty: sampling.presencePenalty ?? 0,
                    frequencyPenalty: sampling.frequencyPenalty ?? 0
                }
                : undefined,
            yieldEogToken: true,
            contextShift: { strategy: "eraseBeginning", size: 0 }
        });
        let generated = 0;
        this.lockstep.generations += 1;
        try {
            if (request.maxTokens <= 0) return { reason: "length" };
            for await (const token of evaluation) {
                if (signal.aborted) break;
                if (this.llamaModel.isEogToken(token)) return { reason: "eog", token };
                yield token;
                generated += 1;
                if (generated >= request.maxTokens) return { reason: "length" };
                // The sampled token still has to be evaluated: stop while it fits in the slot.
                if (sequence.nextTokenIndex + 1 >= sequence.contextSize) return { reason: "context" };
            }
            // node-llama-cpp ends the evaluation itself only when the context cannot take another token.
            return signal.aborted ? { reason: "length" } : { reason: "context" };
        } finally {
            this.lockstep.generations -= 1;
            await evaluation.return();
        }
    }

    private eogBias: TokenBias | undefined;

    /** Bans every end-of-generation token; the vocabulary is scanned once, on first use. */
    private endOfGenerationBias(): TokenBias {
        if (this.eogBias === undefined) {
            const bias = new TokenBias(this.llamaModel.tokenizer);
            for (let token = 0; token < this.model.vocabularySize; token++) {
                if (this.llamaModel.isEogToken(token as Token)) bias.set(token as Token, "never");
            }
            this.eogBias = bias;
        }
        return this.eogBias;
    }

    async dispose(): Promise<void> {
        await this.context.dispose();
        await this.llamaModel.dispose();
    }
}

/** How many event-loop turns a batch may wait for the other running generations to queue their token. */
const maxLockstepWaitTurns = 8;

/**
 * Dispatches a decode batch once every running generation has queued its next token, so all
 * slots step together in full batches. node-llama-cpp's default ("next cycle") dispatches as soon
 * as the event loop turns, and with several streams it settles into batches of one stream fewer
 * than are running (measured: 43 decodes for 32 steps of 4 streams). A generation held up by its
 * consumer (a slow client) delays the others by at most a few event-loop turns.
 */
class LockstepDispatch {
    /** Generations between their first and last token. */
    generations = 0;
    private queuedSequences: () => number = () => 0;

    attach(context: LlamaContext): void {
        // Internal to node-llama-cpp (pinned at 3.22.1): the sequences with a decode queued.
        const internal = context as unknown as { _queuedDecodeSequenceIds?: Set<number> };
        this.queuedSequences = () => internal._queuedDecodeSequenceIds?.size ?? Number.POSITIVE_INFINITY;
    }

    schedule(dispatch: () => void): void {
        let turns = 0;
        const check = (): void => {
            if (this.queuedSequences() >= this.generations || turns >= maxLockstepWaitTurns) dispatch();
            else {
                turns += 1;
                setImmediate(check);
            }
        };
        setImmediate(check);
    }
}

/**
 * Keeps the longest prefix the slot already holds and erases the rest. At least one prompt token
 * is always evaluated again, since sampling needs the logits of the prompt's last position.
 */
async function reusePrefix(sequence: LlamaContextSequence, prompt: Token[]): Promise<number> {
    const shared = sharedPrefixLength(sequence.contextTokens, prompt, prompt.length - 1);
    if (shared < sequence.nextTokenIndex) {
        await sequence.eraseContextTokenRanges([{ start: shared, end: sequence.nextTokenIndex }]);
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

function randomSeed(): number {
    return Math.floor(Math.random() * 0x7fffffff);
}

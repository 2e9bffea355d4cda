import type { Llama, LlamaContext, LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import type {
    Engine, EngineGrammar, GenerationRequest, GenerationStream, GrammarJsonSchema, ModelInfo, PromptCacheReport, RuntimeInfo
} from "./types.js";
import { InvalidGrammarError } from "../errors.js";
import { findEndOfGenerationToken } from "../grammar/deadEnd.js";
import { decodeLoop } from "./decodeLoop.js";
import { GrammarCache } from "./grammarCache.js";
import { LlamaSlotStore, promptChunkTokens } from "./llamaSlotStore.js";
import { SamplingAdapters } from "./samplingAdapters.js";
import { copySequenceState } from "./sequenceStateCopy.js";
import { timeNativeBatches } from "./nativeBatches.js";
import { SlotCachePolicy } from "./slotCache/slotCachePolicy.js";
import { StateCosts } from "./stateCosts.js";
import { DirectSteps } from "./directSteps.js";
import { StepBarrier } from "./stepBarrier.js";
import { vocabularyPieceBytes } from "./tokenBytes.js";
import type { CacheReport } from "./promptCache/cacheReport.js";
import type { PromptCache } from "./promptCache/promptCache.js";
import { sharedPrefixLength } from "./promptCache/cacheTier.js";

/**
 * The Engine over one llama.cpp context: wires the slots (a LlamaSlotStore under the step
 * barrier), the prompt-cache policy, the grammar cache, the sampling adapters and the decode loop,
 * and delegates to them.
 */
export class LlamaEngine implements Engine {
    private readonly barrier = new StepBarrier();
    private readonly costs = new StateCosts();
    private readonly store: LlamaSlotStore;
    private readonly policy: SlotCachePolicy;
    private readonly grammars: GrammarCache;
    private readonly sampling: SamplingAdapters;
    private readonly direct: DirectSteps | undefined;

    constructor(
        llama: Llama,
        private readonly llamaModel: LlamaModel,
        private readonly context: LlamaContext,
        sequences: readonly LlamaContextSequence[],
        windowedSlidingWindow: number,
        private readonly cache: PromptCache | undefined,
        private readonly cacheReport: CacheReport,
        readonly model: ModelInfo,
        readonly runtime: RuntimeInfo
    ) {
        timeNativeBatches(context, (tokens, milliseconds) => this.costs.noteBatch(tokens, milliseconds));
        this.store = new LlamaSlotStore(sequences, this.barrier, windowedSlidingWindow);
        this.policy = new SlotCachePolicy({ store: this.store, cache, slidingWindow: model.slidingWindow, costs: this.costs });
        this.grammars = new GrammarCache(llama);
        this.sampling = new SamplingAdapters(llamaModel, model.vocabularySize);
        this.direct = DirectSteps.for(context, llamaModel);
        this.direct?.settleFor(this.barrier);
    }

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
        const endOfGeneration = findEndOfGenerationToken(gbnf, {
            singleToken: (text) => {
                const tokens = this.llamaModel.tokenize(text, true);
                return tokens.length === 1 ? tokens[0] : undefined;
            },
            isEndOfGeneration: (token) => this.isValidToken(token) && this.llamaModel.isEogToken(token as Token)
        });
        if (endOfGeneration !== undefined) throw new InvalidGrammarError(`${endOfGeneration}.`);
        return await this.grammars.compile(gbnf);
    }

    jsonGrammarRules(schema: GrammarJsonSchema | undefined): Promise<string> {
        return this.grammars.jsonGrammarRules(schema);
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

    async sharePrompt(source: number, targets: readonly number[], promptTokens: readonly number[], cacheKey?: string, nextTurnPrefix?: number,
        preambleTokens?: number, loopStartPrefix?: number): Promise<number> {
        const sequence = this.store.sequence(source);
        const prompt = promptTokens as Token[];
        const { cached, held } = await this.policy.prepare(source, prompt, cacheKey, nextTurnPrefix, preambleTokens, loopStartPrefix);
        // The last prompt token is each generation's own first step: its logits are sampled.
        const shared = prompt.length - 1;
        if (shared > held) await sequence.evaluateWithoutGeneratingNewTokens(prompt.slice(held, shared));
        for (const target of targets) {
            const targetSequence = this.store.sequence(target);
            // Already holds it (the same prompt again): its generation erases whatever follows.
            if (sharedPrefixLength(targetSequence.contextTokens, prompt, shared) === shared) continue;
            await this.barrier.exclusive(() => copySequenceState(targetSequence, sequence, shared));
            this.policy.copied(target, prompt, cacheKey, nextTurnPrefix, loopStartPrefix);
        }
        return cached;
    }

    chooseSlot(freeSlots: readonly number[], promptTokens: readonly number[], cacheKey: string | undefined): number {
        return this.policy.chooseSlot(freeSlots, promptTokens, cacheKey);
    }

    promptCacheReport(): PromptCacheReport | undefined {
        if (this.cache === undefined) return undefined;
        const { bytes, limits } = this.cache.stats();
        return this.cacheReport.snapshot(bytes, limits, this.policy.saveRule());
    }

    slotKvCells(slot: number): number {
        // node-llama-cpp has no public count of a sequence's KV cells; its evaluated-token count is
        // that number: one cell per position 0…n−1 (Maple erases only a slot's tail, and stops
        // before a context shift would be needed).
        return this.store.tokenCount(slot);
    }

    async generateOnSlot(slot: number, request: GenerationRequest): Promise<GenerationStream> {
        const sequence = this.store.sequence(slot);
        const prompt = request.promptTokens as Token[];
        const { cached: cachedPromptTokens, held: prepared, checkpointAfterPrompt } = await this.policy.prepare(slot, prompt, request.cacheKey,
            request.nextTurnPrefix, request.preambleTokens, request.loopStartPrefix);
        const held = await this.evaluateLongPrompt(slot, prompt, prepared);
        const checkpoint = this.store.checkpoint;
        const generation = decodeLoop({
            slot, sequence, model: this.llamaModel, input: prompt.slice(held),
            sampling: this.sampling.forRequest(request, prompt, held),
            maxTokens: request.maxTokens, signal: request.signal, barrier: this.barrier, direct: this.direct,
            afterPrompt: checkpointAfterPrompt && checkpoint !== undefined ? () => checkpoint(slot) : undefined
        });
        return { cachedPromptTokens, tokens: () => generation };
    }

    /**
     * Evaluates all but the last token of a prompt longer than one chunk through the slot store,
     * whose chunks let a state save in (see StepBarrier.prefillGate); the decode loop's first step
     * then evaluates only the last one. Returns the prompt tokens the slot holds.
     */
    private async evaluateLongPrompt(slot: number, prompt: readonly Token[], held: number): Promise<number> {
        const last = prompt.length - 1;
        if (last - held <= promptChunkTokens) return held;
        await this.store.evaluate(slot, prompt.slice(held, last));
        return this.store.tokenCount(slot);
    }

    async dispose(): Promise<void> {
        await this.policy.saveForShutdown();
        await this.cache?.dispose();
        await this.context.dispose();
        await this.llamaModel.dispose();
    }
}

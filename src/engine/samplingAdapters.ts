import {
    LlamaGrammarEvaluationState, TokenBias, type LlamaContextSequence, type LlamaModel, type Token
} from "node-llama-cpp";
import { CompiledGrammar } from "./grammarCache.js";
import { PenaltyWindow, penaltyWindowSize } from "./penaltyWindow.js";
import type { EngineGrammar, GeneratedToken, GenerationRequest, SamplingOptions, TokenIdLogprob } from "./types.js";

/** What `evaluateWithMetadata` yields, whichever metadata was asked for. */
export interface EvaluationOutput {
    token: Token;
    confidence?: number;
    probabilities?: Map<Token, number>;
}

type EvaluateArguments = Parameters<LlamaContextSequence["evaluateWithMetadata"]>;

/** One request's sampling, as node-llama-cpp takes it, and what turns its output into Maple's tokens. */
export interface RequestSampling {
    /** The metadata to ask `evaluateWithMetadata` for. */
    readonly metadata: { confidence?: true; probabilities?: boolean };
    /** The evaluation options: sampler settings, grammar, bias and penalties. */
    readonly options: EvaluateArguments[2];
    /**
     * Sampling reads state the consumer updates from the tokens before (a grammar chosen per
     * token), so the next token may be decoded only after the consumer has seen this one.
     */
    readonly followsConsumer: boolean;
    /** A sampled token the generation keeps (not an end of generation): the penalties see it, and its logprobs are converted. */
    accept(output: EvaluationOutput): GeneratedToken;
    /**
     * The addon sampler's config for the next step, as node-llama-cpp 3.22.1 resolves it
     * (`_resolveSamplerConfig`): only for a request without grammar or logprobs, whose steps may
     * skip node-llama-cpp's evaluation (DirectSteps).
     */
    readonly directConfig?: () => Record<string, unknown>;
}

/** vLLM's stand-in for the log of a zero probability, which JSON cannot carry as -Infinity. */
const minLogprob = -9999;

/**
 * Maple's sampling options translated into node-llama-cpp's: the one place a new sampling option
 * goes (its field in SamplingOptions, its translation here). Holds what is computed once per model
 * (the end-of-generation tokens `ignore_eos` bans).
 */
export class SamplingAdapters {
    private eogBias: TokenBias | undefined;
    private eogTokens: Token[] | undefined;

    constructor(private readonly model: LlamaModel, private readonly vocabularySize: number) {}

    /** The sampling of `request`, whose slot holds the first `cached` tokens of `prompt` already. */
    forRequest(request: GenerationRequest, prompt: readonly Token[], cached: number): RequestSampling {
        const { sampling } = request;
        const input = prompt.slice(cached);
        const penalties = sampling.repetitionPenalty !== undefined || sampling.presencePenalty || sampling.frequencyPenalty;
        const penaltyWindow = penalties ? new PenaltyWindow(prompt.slice(Math.max(0, cached - penaltyWindowSize), cached), input) : undefined;
        const top = request.logprobs?.top;
        const seed = sampling.seed ?? randomSeed();
        const tokenBias = this.tokenBias(sampling);
        const plain = top === undefined && request.grammar === undefined && !(sampling.grammar instanceof CompiledGrammar);
        return {
            directConfig: plain ? directConfig(sampling, seed, tokenBias, penaltyWindow) : undefined,
            // Probabilities only when asked for: at temperature 0 they are a full-vocabulary sort and copy per token.
            metadata: top === undefined ? {} : { confidence: true, probabilities: top > 0 },
            followsConsumer: request.grammar !== undefined,
            options: {
                temperature: sampling.temperature,
                topK: sampling.topK,
                topP: sampling.topP,
                minP: sampling.minP,
                seed,
                grammarEvaluationState: this.grammarEvaluation(request),
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
            },
            accept: (output) => {
                penaltyWindow?.decoding(output.token);
                return top === undefined ? { token: output.token } : withLogprobs(output, top);
            }
        };
    }

    /** The request's grammar: one state for `sampling.grammar`, or a state per grammar its selector returns. */
    private grammarEvaluation(request: GenerationRequest): LlamaGrammarEvaluationState | (() => LlamaGrammarEvaluationState | undefined) | undefined {
        const select = request.grammar;
        if (select === undefined) {
            const grammar = request.sampling.grammar;
            return grammar instanceof CompiledGrammar ? new LlamaGrammarEvaluationState({ model: this.model, grammar: grammar.grammar }) : undefined;
        }
        // node-llama-cpp (3.22.1) calls this before sampling each token and feeds the sampled
        // token only to the state returned for it (AddonSampler::acceptToken).
        const states = new Map<EngineGrammar, LlamaGrammarEvaluationState>();
        return () => {
            const grammar = select();
            if (!(grammar instanceof CompiledGrammar)) return undefined;
            let state = states.get(grammar);
            if (state === undefined) {
                state = new LlamaGrammarEvaluationState({ model: this.model, grammar: grammar.grammar });
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

    /**
     * A TokenBias written through its internal map (node-llama-cpp 3.22.1): its public `set()`
     * silently skips end-of-generation tokens, which would make `ignore_eos` and a `logit_bias` on
     * an EOG token do nothing. The sampler applies every entry of the map.
     */
    private biasFor(logitBias: ReadonlyMap<number, number>, banEndOfGeneration: boolean): TokenBias {
        const bias = new TokenBias(this.model.tokenizer);
        const entries = (bias as unknown as { _biases: Map<Token, number> })._biases;
        for (const [token, logit] of logitBias) entries.set(token as Token, logit);
        if (banEndOfGeneration) {
            // The vocabulary is scanned once, on first use (~20 ms for 152k tokens).
            this.eogTokens ??= Array.from({ length: this.vocabularySize }, (_, token) => token as Token)
                .filter((token) => this.model.isEogToken(token));
            for (const token of this.eogTokens) entries.set(token, Number.NEGATIVE_INFINITY);
        }
        return bias;
    }
}

/** A sampled token with its log-probability and, when `top` > 0, the most likely alternatives. */
function withLogprobs(output: EvaluationOutput, top: number): GeneratedToken {
    const probability = output.confidence ?? output.probabilities?.get(output.token) ?? 0;
    const generated: GeneratedToken = { token: output.token, logprob: toLogprob(probability) };
    if (top > 0 && output.probabilities !== undefined) {
        // node-llama-cpp returns the map most likely first.
        const best: TokenIdLogprob[] = [];
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

/** The addon's sampler config, built as node-llama-cpp 3.22.1's `_resolveSamplerConfig` builds it (the bias once). */
function directConfig(sampling: SamplingOptions, seed: number, tokenBias: TokenBias | undefined, penaltyWindow: PenaltyWindow | undefined): () => Record<string, unknown> {
    const config: Record<string, unknown> = {
        temperature: sampling.temperature ?? 0,
        minP: sampling.minP ?? 0,
        topK: sampling.topK ?? 40,
        topP: sampling.topP ?? 0.95,
        seed: Math.max(0, Math.floor(seed))
    };
    const biases = (tokenBias as unknown as { _biases?: Map<Token, number> } | undefined)?._biases;
    if (biases !== undefined && biases.size > 0) {
        config["tokenBiasKeys"] = Uint32Array.from(biases.keys());
        config["tokenBiasValues"] = Float32Array.from(biases.values());
    }
    if (penaltyWindow === undefined) return () => config;
    return () => {
        const tokens = penaltyWindow.tokens;
        return {
            ...config,
            repeatPenalty: sampling.repetitionPenalty ?? 1,
            repeatPenaltyMaxTokens: Math.max(penaltyWindowSize, tokens.length),
            repeatPenaltyTokens: Uint32Array.from(tokens),
            repeatPenaltyPresencePenalty: sampling.presencePenalty ?? 0,
            repeatPenaltyFrequencyPenalty: sampling.frequencyPenalty ?? 0
        };
    };
}

function randomSeed(): number {
    return Math.floor(Math.random() * 0x7fffffff);
}

import { RequestAbortedError } from "../errors.js";
import type { Engine, GeneratedToken, GrammarSelector, SamplingOptions } from "../engine/types.js";
import type { Scheduler, SlotLease } from "../scheduler/scheduler.js";
import { HeldTokens } from "../text/heldTokens.js";
import { StopMatcher } from "../text/stopMatcher.js";
import { TokenTextDecoder, type PreservedTokens } from "../text/tokenTextDecoder.js";

export interface TextGenerationRequest {
    promptTokens: readonly number[];
    sampling: SamplingOptions;
    maxTokens: number;
    /** Stop strings over the raw output; the matched one and all after it are cut. */
    stop: readonly string[];
    signal: AbortSignal;
    /** Sees this generation's timings and counts (the metrics); none by default. */
    observer?: GenerationObserver;
    /** Report each token's log-probability and its `top` (0–20) alternatives. */
    logprobs?: { top: number };
    /** Chooses each token's grammar (a constraint on the answer only); see `GrammarSelector`. */
    grammar?: GrammarSelector;
    /** The conversation this request continues (wire/conversationKey.ts): slot and prompt-cache affinity. */
    cacheKey?: string;
    /** How many leading prompt tokens the conversation's next request will repeat (GenerationRequest.nextTurnPrefix). */
    nextTurnPrefix?: number;
    /** Inside a tool loop: how many the user's next message will repeat (GenerationRequest.loopStartPrefix). */
    loopStartPrefix?: number;
    /** Leading prompt tokens other sessions share (GenerationRequest.preambleTokens). */
    preambleTokens?: number;
    /** Special tokens whose text the output keeps (the chat format's markers; see preservedTokens.ts). */
    preservedTokens?: PreservedTokens;
}

/** What differs between the choices of one request (n > 1); `startTextGenerations` takes one per choice. */
export interface ChoiceOptions {
    grammar?: GrammarSelector;
    observer?: GenerationObserver;
}

/**
 * Watches one generation for metrics. Called on the generating path, once per token: each method
 * must be cheap (a clock read and a histogram observation) and must not throw.
 */
export interface GenerationObserver {
    /** The first generated token arrived (after the slot wait and the prompt's evaluation). */
    onFirstToken(): void;
    /** Every later generated token arrived. */
    onToken(): void;
    /**
     * Once, when the engine's stream is over: `completed` is false when the generation was
     * cancelled or failed, and `counts` then holds what was done up to that point. (A consumer
     * that stops iterating `pieces` without resuming it never reaches this.)
     */
    onEnd(counts: GenerationCounts, completed: boolean): void;
}

/** Token counts of one generation so far, and how long it waited for a slot. */
export type GenerationCounts = Pick<GenerationSummary, "promptTokens" | "completionTokens" | "cachedTokens" | "queuedMs">;

/** One generated token and the text it completed (often "" while a character or a possible stop string is open). */
export interface GeneratedPiece {
    text: string;
    /** The token (with its log-probabilities when asked for); absent on the last piece, which only flushes held text. */
    token?: GeneratedToken;
    /**
     * The tokens whose text begins in `text`, in order: the ones a response reports (logprobs)
     * with it, so they line up with the returned text. A token is held while a possible stop
     * string holds its text; where a stop string cuts, a token that straddles the cut comes (some
     * of its text is returned) and one that begins at or past it never does (see HeldTokens).
     */
    textTokens: GeneratedToken[];
}

export type FinishReason = "stop" | "length";

export interface GenerationSummary {
    finishReason: FinishReason;
    /** The stop string that matched, or the end-of-generation token id (the peer API's `matched_stop`); null otherwise. */
    matchedStop: string | number | null;
    /** The prompt's tokens; 0 for the other choices of an n > 1 request, whose prompt was evaluated once (summing choices gives the usage). */
    promptTokens: number;
    completionTokens: number;
    /** Prompt tokens reused from the slot's cache (0 for the other choices of an n > 1 request). */
    cachedTokens: number;
    /** Milliseconds spent waiting for a slot. */
    queuedMs: number;
}

export interface TextGeneration extends Disposable {
    /** One piece per generated token; returns the summary. */
    readonly pieces: AsyncGenerator<GeneratedPiece, GenerationSummary, void>;
    /** Ends the generation and frees its slot; safe to call more than once, and needed when `pieces` was not iterated to its end. */
    close(): void;
    /**
     * Stops this generation and the other choices of its request at their next token (their
     * `pieces` then throw RequestAbortedError): one choice failed, the response is lost.
     */
    cancel(): void;
}

/**
 * Starts one request's generation below the API layer. Resolves once a slot is held, so a full
 * queue is still an HTTP 503 rather than an error inside a started stream; rejects with
 * EngineOverloadedError or RequestAbortedError.
 */
export async function startTextGeneration(engine: Engine, scheduler: Scheduler, request: TextGenerationRequest): Promise<TextGeneration> {
    const [generation] = await startTextGenerations(engine, scheduler, request, [{ grammar: request.grammar, observer: request.observer }]);
    return generation!;
}

/**
 * Starts the `choices.length` (n) generations of one request: n slots held at once (one wait in
 * the queue), the prompt evaluated once and its state copied into the other slots, then each
 * choice sampled on its own, choice i with seed `seed + i` when the request has a seed. Resolves
 * and rejects as `startTextGeneration`.
 */
export async function startTextGenerations(engine: Engine, scheduler: Scheduler, request: TextGenerationRequest,
    choices: readonly ChoiceOptions[]): Promise<TextGeneration[]> {
    const leases = await scheduler.acquireMany(choices.length, request.promptTokens, request.signal, request.cacheKey);
    const releaseAll = (): void => leases.forEach((lease) => lease.release());
    let sharedCachedTokens: number | undefined;
    if (leases.length > 1) {
        try {
            sharedCachedTokens = await engine.sharePrompt(leases[0]!.slot, leases.slice(1).map((lease) => lease.slot), request.promptTokens, request.cacheKey, request.nextTurnPrefix,
                request.preambleTokens, request.loopStartPrefix);
        } catch (error) {
            releaseAll();
            throw error;
        }
        if (request.signal.aborted) {
            releaseAll();
            throw new RequestAbortedError();
        }
    }
    const failed = new AbortController();
    const signal = leases.length > 1 ? AbortSignal.any([request.signal, failed.signal]) : request.signal;
    return leases.map((lease, index): TextGeneration => {
        const seed = request.sampling.seed;
        const choice: TextGenerationRequest = {
            ...request,
            signal,
            sampling: seed === undefined || index === 0 ? request.sampling : { ...request.sampling, seed: (seed + index) >>> 0 },
            grammar: choices[index]?.grammar,
            observer: choices[index]?.observer
        };
        const shared = sharedCachedTokens === undefined ? undefined : { first: index === 0, cachedTokens: sharedCachedTokens };
        const pieces = generateText(engine, lease, choice, shared);
        // Returning the generator runs its finally blocks even when its consumer stopped early (a
        // client gone mid-send): the engine's evaluation ends and its slot leaves the step barrier.
        const close = (): void => {
            lease.release();
            void pieces.return(undefined as never).catch(() => undefined);
        };
        return { pieces, close, cancel: () => failed.abort(), [Symbol.dispose]: close };
    });
}

/**
 * Runs the engine on a held slot, turns tokens into text (UTF-8 safe), applies stop strings, and
 * releases the slot however it ends. Each yielded piece is one token; its text may be empty.
 * `shared`: one of n > 1 choices whose prompt `sharePrompt` evaluated (its cache count, and
 * whether this choice is the one that counts the prompt).
 */
async function* generateText(engine: Engine, lease: SlotLease, request: TextGenerationRequest,
    shared?: { first: boolean; cachedTokens: number }): AsyncGenerator<GeneratedPiece, GenerationSummary, void> {
    try {
        const stream = await engine.generateOnSlot(lease.slot, {
            promptTokens: request.promptTokens,
            sampling: request.sampling,
            maxTokens: request.maxTokens,
            signal: request.signal,
            grammar: request.grammar,
            logprobs: request.logprobs,
            cacheKey: request.cacheKey,
            nextTurnPrefix: request.nextTurnPrefix,
            loopStartPrefix: request.loopStartPrefix,
            preambleTokens: request.preambleTokens
        });
        const decoder = new TokenTextDecoder((tokens, previous) => engine.detokenize(tokens, previous), request.preservedTokens);
        const stopMatcher = new StopMatcher(request.stop);
        const heldTokens = new HeldTokens<GeneratedToken>();
        const tokens = stream.tokens();
        let completionTokens = 0;
        let completed = false;
        const countsPrompt = shared?.first ?? true;
        const counts = (): GenerationCounts => ({
            completionTokens,
            promptTokens: countsPrompt ? request.promptTokens.length : 0,
            cachedTokens: countsPrompt ? shared?.cachedTokens ?? stream.cachedPromptTokens : 0,
            queuedMs: lease.waitedMs
        });
        const summary = (finishReason: FinishReason, matchedStop: string | number | null): GenerationSummary => {
            completed = true;
            return { finishReason, matchedStop, ...counts() };
        };
        const observer = request.observer;
        try {
            for (;;) {
                const next = await tokens.next();
                if (request.signal.aborted) throw new RequestAbortedError();
                if (next.done) {
                    const flushed = decoder.flush();
                    heldTokens.decoded(flushed);
                    const tail = stopMatcher.push(flushed);
                    const text = tail.matched === undefined ? tail.text + stopMatcher.flush() : tail.text;
                    const textTokens = heldTokens.released(text);
                    if (tail.matched === undefined) textTokens.push(...heldTokens.flush());
                    if (text !== "" || textTokens.length > 0) yield { text, textTokens };
                    const end = next.value;
                    if (tail.matched !== undefined) return summary("stop", tail.matched);
                    if (end.reason === "eog") return summary("stop", end.token);
                    return summary("length", null);
                }
                completionTokens += 1;
                if (observer !== undefined) {
                    if (completionTokens === 1) observer.onFirstToken();
                    else observer.onToken();
                }
                const decoded = decoder.push(next.value.token);
                heldTokens.generated(next.value, decoded);
                const result = stopMatcher.push(decoded);
                yield { text: result.text, token: next.value, textTokens: heldTokens.released(result.text) };
                if (result.matched !== undefined) return summary("stop", result.matched);
            }
        } finally {
            observer?.onEnd(counts(), completed);
            await tokens.return(undefined as never);
        }
    } finally {
        lease.release();
    }
}

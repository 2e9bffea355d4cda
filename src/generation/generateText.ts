import { RequestAbortedError } from "../errors.js";
import type { Engine, SamplingOptions } from "../engine/types.js";
import type { Scheduler, SlotLease } from "../scheduler/scheduler.js";
import { StopMatcher } from "../text/stopMatcher.js";
import { TokenTextDecoder } from "../text/tokenTextDecoder.js";

export interface TextGenerationRequest {
    promptTokens: readonly number[];
    sampling: SamplingOptions;
    maxTokens: number;
    /** Stop strings over the raw output; the matched one and all after it are cut. */
    stop: readonly string[];
    signal: AbortSignal;
}

/** One generated token and the text it completed (often "" while a character or a possible stop string is open). */
export interface GeneratedPiece {
    text: string;
}

export type FinishReason = "stop" | "length";

export interface GenerationSummary {
    finishReason: FinishReason;
    /** The stop string that matched, or the end-of-generation token id (the peer API's `matched_stop`); null otherwise. */
    matchedStop: string | number | null;
    promptTokens: number;
    completionTokens: number;
    cachedTokens: number;
    /** Milliseconds spent waiting for a slot. */
    queuedMs: number;
}

export interface TextGeneration extends Disposable {
    /** One piece per generated token; returns the summary. */
    readonly pieces: AsyncGenerator<GeneratedPiece, GenerationSummary, void>;
    /** Frees the slot; safe to call more than once, and needed when `pieces` was never iterated. */
    close(): void;
}

/**
 * Starts one request's generation below the API layer. Resolves once a slot is held, so a full
 * queue is still an HTTP 503 rather than an error inside a started stream; rejects with
 * EngineOverloadedError or RequestAbortedError.
 */
export async function startTextGeneration(engine: Engine, scheduler: Scheduler, request: TextGenerationRequest): Promise<TextGeneration> {
    const lease = await scheduler.acquire(request.promptTokens, request.signal);
    const close = (): void => lease.release();
    return { pieces: generateText(engine, lease, request), close, [Symbol.dispose]: close };
}

/**
 * Runs the engine on a held slot, turns tokens into text (UTF-8 safe), applies stop strings, and
 * releases the slot however it ends. Each yielded piece is one token; its text may be empty.
 */
async function* generateText(engine: Engine, lease: SlotLease, request: TextGenerationRequest): AsyncGenerator<GeneratedPiece, GenerationSummary, void> {
    try {
        const stream = await engine.startGeneration(lease.slot, {
            promptTokens: request.promptTokens,
            sampling: request.sampling,
            maxTokens: request.maxTokens,
            signal: request.signal
        });
        const decoder = new TokenTextDecoder((tokens, previous) => engine.detokenize(tokens, previous));
        const stopMatcher = new StopMatcher(request.stop);
        const tokens = stream.tokens();
        let completionTokens = 0;
        const summary = (finishReason: FinishReason, matchedStop: string | number | null): GenerationSummary => ({
            finishReason, matchedStop, completionTokens,
            promptTokens: request.promptTokens.length,
            cachedTokens: stream.cachedPromptTokens,
            queuedMs: lease.waitedMs
        });
        try {
            for (;;) {
                const next = await tokens.next();
                if (request.signal.aborted) throw new RequestAbortedError();
                if (next.done) {
                    const tail = stopMatcher.push(decoder.flush());
                    const text = tail.matched === undefined ? tail.text + stopMatcher.flush() : tail.text;
                    if (text !== "") yield { text };
                    const end = next.value;
                    if (tail.matched !== undefined) return summary("stop", tail.matched);
                    if (end.reason === "eog") return summary("stop", end.token);
                    return summary("length", null);
                }
                completionTokens += 1;
                const result = stopMatcher.push(decoder.push(next.value));
                yield { text: result.text };
                if (result.matched !== undefined) return summary("stop", result.matched);
            }
        } finally {
            await tokens.return(undefined as never);
        }
    } finally {
        lease.release();
    }
}

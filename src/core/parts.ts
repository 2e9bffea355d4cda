import type { TokenIdLogprob } from "../engine/types.js";

/**
 * What the generation core yields for each choice: a typed stream of parts, in the order the
 * model produced them. The order a writer can rely on:
 *
 * - `reasoning-delta` parts all come first (a model reasons before it answers); the reasoning
 *   block has ended when the first other part, or `finish`, arrives. One exception: gpt-oss (the
 *   harmony format) may write a commentary preamble (text), reason again, then call a tool; that
 *   reasoning comes after the text (`BlockTracker` opens a new reasoning block for it).
 * - `text-delta` and `tool-call` parts follow, possibly interleaved (text, a call, more text). A
 *   text block ends at the next `tool-call` or at `finish`.
 * - A `tool-call` arrives whole (name and complete JSON arguments) when the model closed it.
 *   Whitespace around tool-call blocks is formatting: a turn of only tool calls has no text part.
 * - `logprobs` parts come just before the text parts of the same token (a token whose text is
 *   still held, such as part of a marker, has its logprobs first and its text later). They line
 *   up with the returned text: where a stop string cuts it, a token straddling the cut has them,
 *   and the tokens past it (the stop string's own) have none.
 * - `finish` is the last part of every choice that completed.
 *
 * Block-structured writers (Responses, Anthropic) take block starts and ends from `BlockTracker`
 * rather than re-deriving them from these rules.
 */
export type GenerationPart =
    | { type: "reasoning-delta"; text: string }
    | { type: "text-delta"; text: string }
    /** `index`: this choice's calls counted from 0. `arguments`: JSON text of an object, `"{}"` for none. */
    | { type: "tool-call"; index: number; name: string; arguments: string }
    | { type: "logprobs"; token: TokenLogprobs }
    | FinishPart;

export interface FinishPart {
    type: "finish";
    /**
     * "stop": the model ended its turn (its end-of-generation token) or a stop string matched;
     * "length": the token limit or the context ran out.
     */
    reason: "stop" | "length";
    /**
     * The stop string that matched (a string), or the end-of-generation token's id (a number);
     * null for "length". (The peer API's `matched_stop`; Anthropic's `stop_sequence` when a string.)
     */
    matchedStop: string | number | null;
    /** Tool calls this choice made: a "stop" with calls is a tool-calling turn. */
    toolCalls: number;
    /** This choice's counts; sum the choices' with `sumUsage` for the request's. */
    usage: Usage;
}

/** Token counts of one choice, or (summed with `sumUsage`) of a whole request. */
export interface Usage {
    /** The prompt's tokens; counted on the first choice only (the prompt is evaluated once). */
    promptTokens: number;
    /** Prompt tokens reused from a slot's cache instead of evaluated (first choice only, too). */
    cachedTokens: number;
    completionTokens: number;
    /** Completion tokens generated inside the think block (0 for a raw completion). */
    reasoningTokens: number;
}

/** One generated token's log-probability (natural log) and its most likely alternatives. */
export interface TokenLogprobs extends TokenLogprob {
    /** Most likely first; empty when no alternatives were asked for. */
    top: TokenLogprob[];
}

/** The engine's token id and log-probability, with what the wire formats show of the token. */
export interface TokenLogprob extends TokenIdLogprob {
    /** The token's text (special tokens as their text; part of a UTF-8 character shows as U+FFFD). */
    text: string;
    /** The token's exact bytes. */
    bytes: number[];
}

export function sumUsage(usages: readonly Usage[]): Usage {
    return usages.reduce<Usage>((sum, usage) => ({
        promptTokens: sum.promptTokens + usage.promptTokens,
        cachedTokens: sum.cachedTokens + usage.cachedTokens,
        completionTokens: sum.completionTokens + usage.completionTokens,
        reasoningTokens: sum.reasoningTokens + usage.reasoningTokens
    }), { promptTokens: 0, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0 });
}

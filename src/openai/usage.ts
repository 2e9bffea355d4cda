import type { GenerationSummary } from "../generation/generateText.js";

export interface WireUsage {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    prompt_tokens_details: { cached_tokens: number };
    completion_tokens_details?: { reasoning_tokens: number };
    /** The hosted peer's top-level copy of completion_tokens_details.reasoning_tokens. */
    reasoning_tokens?: number;
}

/** Token counts of one generation, or the sum over the choices of an n > 1 request (see `sumCounts`). */
export type UsageCounts = Pick<GenerationSummary, "promptTokens" | "completionTokens" | "cachedTokens">;

/**
 * The counts of a request from its choices' summaries: each choice counts its own generated
 * tokens, and only the first counts the prompt (evaluated once), so the sums are the request's.
 */
export function sumCounts(summaries: readonly UsageCounts[]): UsageCounts {
    return summaries.reduce<UsageCounts>((sum, summary) => ({
        promptTokens: sum.promptTokens + summary.promptTokens,
        completionTokens: sum.completionTokens + summary.completionTokens,
        cachedTokens: sum.cachedTokens + summary.cachedTokens
    }), { promptTokens: 0, completionTokens: 0, cachedTokens: 0 });
}

export function toWireUsage(summary: UsageCounts, reasoningTokens?: number): WireUsage {
    const usage: WireUsage = {
        prompt_tokens: summary.promptTokens,
        completion_tokens: summary.completionTokens,
        total_tokens: summary.promptTokens + summary.completionTokens,
        prompt_tokens_details: { cached_tokens: summary.cachedTokens }
    };
    if (reasoningTokens !== undefined) {
        usage.completion_tokens_details = { reasoning_tokens: reasoningTokens };
        usage.reasoning_tokens = reasoningTokens;
    }
    return usage;
}

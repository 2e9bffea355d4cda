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

export function toWireUsage(summary: GenerationSummary, reasoningTokens?: number): WireUsage {
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

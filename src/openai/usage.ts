import type { CompletionUsage } from "openai/resources/completions";
import type { Usage } from "../core/index.js";
import type { Sent } from "../wire/sdkShape.js";

/** OpenAI's usage, plus `reasoning_tokens`: the hosted peer's top-level copy of completion_tokens_details.reasoning_tokens. */
export type WireUsage = Sent<CompletionUsage, never, {
    prompt_tokens_details: Pick<Required<CompletionUsage.PromptTokensDetails>, "cached_tokens">;
    completion_tokens_details?: Pick<Required<CompletionUsage.CompletionTokensDetails>, "reasoning_tokens">;
    reasoning_tokens?: number;
}>;

/** OpenAI's usage object; `withReasoning`: chat's reasoning-token fields (a raw completion has none). */
export function toWireUsage(usage: Usage, withReasoning: boolean): WireUsage {
    const wire: WireUsage = {
        prompt_tokens: usage.promptTokens,
        completion_tokens: usage.completionTokens,
        total_tokens: usage.promptTokens + usage.completionTokens,
        prompt_tokens_details: { cached_tokens: usage.cachedTokens }
    };
    if (withReasoning) {
        wire.completion_tokens_details = { reasoning_tokens: usage.reasoningTokens };
        wire.reasoning_tokens = usage.reasoningTokens;
    }
    return wire;
}

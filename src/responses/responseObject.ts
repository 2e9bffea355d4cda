import type { Usage } from "../conversation/index.js";

export type ResponseStatus = "in_progress" | "completed" | "incomplete" | "failed" | "cancelled";

/** What every snapshot of one response shares: its id, model, creation time and the request's settings. */
export interface ResponseIdentity {
    id: string;
    createdAt: number;
    model: string;
    /** The request's settings as the response repeats them (see `settingsEcho`). */
    echo: Record<string, unknown>;
}

/** The core's usage: prompt, cached, completion and reasoning tokens. */
export type ResponseUsageCounts = Usage;

/** OpenAI's Responses usage: `input_tokens`, `output_tokens` and their details. */
export function toResponseUsage(counts: ResponseUsageCounts): Record<string, unknown> {
    return {
        input_tokens: counts.promptTokens,
        input_tokens_details: { cached_tokens: counts.cachedTokens },
        output_tokens: counts.completionTokens,
        output_tokens_details: { reasoning_tokens: counts.reasoningTokens },
        total_tokens: counts.promptTokens + counts.completionTokens
    };
}

/** The concatenated `output_text` parts of the message items (the SDKs' `output_text`). */
export function outputTextOf(output: readonly Record<string, unknown>[]): string {
    let text = "";
    for (const item of output) {
        if (item["type"] !== "message") continue;
        for (const part of item["content"] as Record<string, unknown>[]) {
            if (part["type"] === "output_text") text += part["text"] as string;
        }
    }
    return text;
}

/** One snapshot of the `response` object, as `response.created`, GET and the final event carry it. */
export function responseObject(identity: ResponseIdentity, status: ResponseStatus, output: Record<string, unknown>[], details: {
    usage?: ResponseUsageCounts;
    incompleteReason?: "max_output_tokens";
    error?: { code: string; message: string };
    completedAt?: number;
} = {}): Record<string, unknown> {
    return {
        id: identity.id,
        object: "response",
        created_at: identity.createdAt,
        status,
        completed_at: details.completedAt ?? null,
        error: details.error ?? null,
        incomplete_details: details.incompleteReason === undefined ? null : { reason: details.incompleteReason },
        model: identity.model,
        output,
        output_text: outputTextOf(output),
        usage: details.usage === undefined ? null : toResponseUsage(details.usage),
        ...identity.echo
    };
}

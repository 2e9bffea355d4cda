import type {
    Response, ResponseCustomToolCall, ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText, ResponseReasoningItem, ResponseUsage
} from "openai/resources/responses/responses";
import type { Usage } from "../core/index.js";
import type { Sent } from "../wire/sdkShape.js";

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

/*
 * The Responses API's wire objects as Maple sends them, checked against the openai SDK's types.
 * Maple adds `status` to custom tool calls (Codex reads it, as on function calls), sends no
 * `cache_write_tokens` (it writes its cache by itself) and gives errors its own codes.
 */
export type SentUsage = Sent<ResponseUsage, never, { input_tokens_details: Sent<ResponseUsage.InputTokensDetails, "cache_write_tokens"> }>;
export type SentOutputText = Sent<ResponseOutputText, never, { annotations: []; logprobs: [] }>;
export type SentReasoningItem = Sent<ResponseReasoningItem, never, { status: "in_progress" | "completed" | "incomplete" }>;
export type SentMessageItem = Sent<ResponseOutputMessage, never, { content: SentOutputText[] }>;
export type SentFunctionCall = Sent<ResponseFunctionToolCall, "caller", { id: string; status: "in_progress" | "completed" }>;
export type SentCustomToolCall = Sent<ResponseCustomToolCall, "caller", { id: string; status: "in_progress" | "completed" }>;
export type SentOutputItem = SentReasoningItem | SentMessageItem | SentFunctionCall | SentCustomToolCall;

/** The fields Maple fills itself; the others are the request's settings (`ResponseIdentity.echo`). */
type OwnField = "id" | "object" | "created_at" | "status" | "completed_at" | "error" | "incomplete_details" | "model" | "output" | "output_text" | "usage";
type SentResponseOwn = Sent<Pick<Response, OwnField>, never, {
    status: ResponseStatus;
    completed_at: number | null;
    error: { code: string; message: string } | null;
    output: SentOutputItem[];
    usage: SentUsage | null;
}>;
/** The `response` object: Maple's own fields, then the echoed settings (typed where the request parser builds them). */
export type SentResponse = SentResponseOwn & Record<string, unknown>;

/** OpenAI's Responses usage: `input_tokens`, `output_tokens` and their details. */
export function toResponseUsage(counts: ResponseUsageCounts): SentUsage {
    return {
        input_tokens: counts.promptTokens,
        input_tokens_details: { cached_tokens: counts.cachedTokens },
        output_tokens: counts.completionTokens,
        output_tokens_details: { reasoning_tokens: counts.reasoningTokens },
        total_tokens: counts.promptTokens + counts.completionTokens
    } satisfies SentUsage;
}

/** The concatenated `output_text` parts of the message items (the SDKs' `output_text`). */
export function outputTextOf(output: readonly SentOutputItem[]): string {
    let text = "";
    for (const item of output) {
        if (item.type !== "message") continue;
        for (const part of item.content) if (part.type === "output_text") text += part.text;
    }
    return text;
}

/** One snapshot of the `response` object, as `response.created`, GET and the final event carry it. */
export function responseObject(identity: ResponseIdentity, status: ResponseStatus, output: SentOutputItem[], details: {
    usage?: ResponseUsageCounts;
    incompleteReason?: "max_output_tokens";
    error?: { code: string; message: string };
    completedAt?: number;
} = {}): SentResponse {
    const own = {
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
        usage: details.usage === undefined ? null : toResponseUsage(details.usage)
    } satisfies SentResponseOwn;
    return { ...own, ...identity.echo };
}

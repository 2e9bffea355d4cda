import type { MapleError } from "../errors.js";

/** Anthropic's error types (https://docs.anthropic.com/en/api/errors) that Maple answers with. */
export type AnthropicErrorType =
    | "invalid_request_error" | "authentication_error" | "not_found_error" | "request_too_large" | "api_error" | "overloaded_error";

export interface AnthropicErrorResponse {
    status: number;
    headers: Record<string, string>;
    body: { type: "error"; error: { type: AnthropicErrorType; message: string } };
}

/**
 * Overload status: Anthropic's own 529 `overloaded_error`. Every client that speaks the Messages
 * API retries it: `@anthropic-ai/sdk` (any status ≥ 500; its `OverloadedError` class is 529),
 * the AI SDK (≥ 500) and Claude Code (529 or an `overloaded_error` body, honouring Retry-After),
 * and Claude Code names it as overload to its user. Maple's 503s (queue full or timed out, model
 * loading, shutting down) all become it, keeping their Retry-After.
 */
const overloadedStatus = 529;

function errorType(status: number): AnthropicErrorType {
    if (status === 401) return "authentication_error";
    if (status === 404) return "not_found_error";
    if (status === 413) return "request_too_large";
    if (status === 503) return "overloaded_error";
    return status >= 500 ? "api_error" : "invalid_request_error";
}

/**
 * A Maple error in Anthropic's shape `{"type": "error", "error": {"type", "message"}}`. The shape
 * has no `param`: a message that does not name its param already gets it in front
 * (`messages[1].content[0].type: …`), as Anthropic's own messages do.
 */
export function anthropicError(error: MapleError): AnthropicErrorResponse {
    const type = errorType(error.status);
    const named = error.param === null || error.message.includes(error.param) ? error.message : `${error.param}: ${error.message}`;
    return {
        status: type === "overloaded_error" ? overloadedStatus : error.status,
        headers: error.headers,
        body: { type: "error", error: { type, message: named } }
    };
}

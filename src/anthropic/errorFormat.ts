import type { ErrorKind, MapleError } from "../errors.js";
import type { ErrorFormat } from "../http/errorFormat.js";
import { httpStatus, retryHeaders } from "../http/errorStatus.js";

/** Anthropic's error types (https://docs.anthropic.com/en/api/errors) that Maple answers with. */
export type AnthropicErrorType =
    | "invalid_request_error" | "authentication_error" | "not_found_error" | "request_too_large" | "api_error" | "overloaded_error";

export interface AnthropicErrorBody {
    type: "error";
    error: { type: AnthropicErrorType; message: string };
}

const typeOfKind: Record<ErrorKind, AnthropicErrorType> = {
    invalid_request: "invalid_request_error",
    request_timeout: "invalid_request_error",
    unsupported_media_type: "invalid_request_error",
    headers_too_large: "invalid_request_error",
    payload_too_large: "request_too_large",
    authentication: "authentication_error",
    not_found: "not_found_error",
    server: "api_error",
    overloaded: "overloaded_error",
    unavailable: "overloaded_error"
};

/**
 * Overload status: Anthropic's own 529 `overloaded_error`. Every client that speaks the Messages
 * API retries it: `@anthropic-ai/sdk` (any status ≥ 500; its `OverloadedError` class is 529),
 * the AI SDK (≥ 500) and Claude Code (529 or an `overloaded_error` body, honouring Retry-After),
 * and Claude Code names it as overload to its user. Maple's 503s (queue full or timed out, model
 * loading, shutting down) all become it, keeping their Retry-After.
 */
const overloadedStatus = 529;

/**
 * A Maple error in Anthropic's shape `{"type": "error", "error": {"type", "message"}}`. The shape
 * has no `param`: a message that does not name its param already gets it in front
 * (`messages[1].content[0].type: …`), as Anthropic's own messages do.
 */
export function anthropicErrorBody(error: MapleError): AnthropicErrorBody {
    const message = error.param === null || error.message.includes(error.param) ? error.message : `${error.param}: ${error.message}`;
    return { type: "error", error: { type: typeOfKind[error.kind], message } };
}

/** The Messages routes' errors: Anthropic's body, 529 for overload, and an `error` event inside a stream. */
export const anthropicErrorFormat: ErrorFormat = {
    response: (error) => {
        const body = anthropicErrorBody(error);
        return { status: body.error.type === "overloaded_error" ? overloadedStatus : httpStatus(error), headers: retryHeaders(error), body };
    },
    streamEvents: (error) => [{ event: "error", data: anthropicErrorBody(error) }]
};

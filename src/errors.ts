/**
 * Maple's one error hierarchy. Every failure that reaches a client is one of these (or becomes a
 * generic `server_error`); `src/http/errorHandler.ts` is the single place that turns them into
 * OpenAI-shaped responses.
 */
export type ErrorType = "invalid_request_error" | "authentication_error" | "not_found_error" | "server_error" | "overloaded_error";

export interface MapleErrorOptions {
    param?: string | null;
    code?: string | null;
    /** Extra response headers, e.g. `Retry-After` on 503. */
    headers?: Record<string, string>;
    cause?: unknown;
}

export class MapleError extends Error {
    readonly status: number;
    readonly type: ErrorType;
    readonly param: string | null;
    readonly code: string | null;
    readonly headers: Record<string, string>;

    constructor(status: number, type: ErrorType, message: string, options: MapleErrorOptions = {}) {
        super(message, { cause: options.cause });
        this.name = new.target.name;
        this.status = status;
        this.type = type;
        this.param = options.param ?? null;
        this.code = options.code ?? null;
        this.headers = options.headers ?? {};
    }

    toJSON(): { error: { message: string; type: ErrorType; param: string | null; code: string | null } } {
        return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
    }
}

export class InvalidRequestError extends MapleError {
    constructor(message: string, param: string | null = null, code: string | null = null) {
        super(400, "invalid_request_error", message, { param, code });
    }
}

export class ContextLengthExceededError extends MapleError {
    constructor(message: string, param = "messages") {
        super(400, "invalid_request_error", message, { param, code: "context_length_exceeded" });
    }
}

export class PayloadTooLargeError extends MapleError {
    constructor(message: string) {
        super(413, "invalid_request_error", message, { param: "body", code: "payload_too_large" });
    }
}

/** A body that is not UTF-8 JSON by its Content-Type (RFC 8259: JSON is UTF-8). */
export class UnsupportedMediaTypeError extends MapleError {
    constructor(message = "Unsupported Content-Type: send 'Content-Type: application/json' (UTF-8).") {
        super(415, "invalid_request_error", message, { param: "Content-Type", code: "unsupported_media_type" });
    }
}

export class AuthenticationError extends MapleError {
    constructor(message = "Invalid or missing API key. Send it as 'Authorization: Bearer <key>' or 'X-Api-Key: <key>'.") {
        super(401, "authentication_error", message, { code: "invalid_api_key" });
    }
}

export class NotFoundError extends MapleError {
    constructor(message: string, param: string | null = null, code: string | null = null) {
        super(404, "not_found_error", message, { param, code });
    }
}

/** Retry-After is in seconds; openai and the AI SDK honour it on 503 (see CLIENTS.md). */
const retryAfterSeconds = "5";

export class ModelLoadingError extends MapleError {
    constructor(message = "The model is still loading; retry shortly.") {
        super(503, "server_error", message, { code: "model_loading", headers: { "retry-after": retryAfterSeconds } });
    }
}

export class EngineOverloadedError extends MapleError {
    /** Which bound was hit: the queue depth, or the time a request may wait. */
    readonly reason: "queue_full" | "queue_timeout";

    constructor(message: string, reason: "queue_full" | "queue_timeout") {
        super(503, "server_error", message, { code: "engine_overloaded", headers: { "retry-after": retryAfterSeconds } });
        this.reason = reason;
    }
}

export class ShuttingDownError extends MapleError {
    constructor(message = "The server is shutting down; retry on another instance or shortly.") {
        super(503, "server_error", message, { code: "server_shutting_down", headers: { "retry-after": retryAfterSeconds } });
    }
}

export class ServerError extends MapleError {
    constructor(message = "The server had an error while processing your request.", cause?: unknown) {
        super(500, "server_error", message, { cause });
    }
}

/** The client went away or the request was cancelled: a normal end, never reported as an error. */
export class RequestAbortedError extends Error {
    constructor() {
        super("request aborted");
        this.name = "RequestAbortedError";
    }
}

export function isAbortError(error: unknown): boolean {
    return error instanceof RequestAbortedError || (error instanceof Error && error.name === "AbortError");
}

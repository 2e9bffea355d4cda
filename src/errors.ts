/**
 * Maple's domain errors: what went wrong, in terms every wire format can render. Each carries a
 * `kind` (what class of failure it is, which decides the HTTP status at the edge), a `code` (a
 * stable machine name such as `context_length_exceeded`), the request field at fault (`param`, in
 * the OpenAI request's notation; another wire format may rename it) and, for the transient ones,
 * how soon to retry. Nothing here knows HTTP: `src/http/errorStatus.ts` maps kinds to statuses and
 * each wire format renders its own body (`src/openai/errorBody.ts` for OpenAI's shape).
 */
export type ErrorKind =
    /** The request is wrong (400). */
    | "invalid_request"
    /** No or a wrong API key (401). */
    | "authentication"
    /** No such route or model (404). */
    | "not_found"
    /** The request's headers or body did not arrive in time (408). */
    | "request_timeout"
    /** The body is over the size limit (413). */
    | "payload_too_large"
    /** The body is not UTF-8 JSON (415). */
    | "unsupported_media_type"
    /** The request headers are too large (431). */
    | "headers_too_large"
    /** Maple failed (500). */
    | "server"
    /** Too much work queued: the queue is full or the wait for a slot timed out (503; Anthropic's 529 overloaded). */
    | "overloaded"
    /** Not serving right now: the model is loading or the server is shutting down (503). */
    | "unavailable";

export interface MapleErrorOptions {
    param?: string | null;
    code?: string | null;
    /** A transient failure: when to try again, in seconds (HTTP's Retry-After). */
    retryAfterSeconds?: number;
    cause?: unknown;
}

export class MapleError extends Error {
    readonly kind: ErrorKind;
    readonly param: string | null;
    readonly code: string | null;
    readonly retryAfterSeconds: number | undefined;

    constructor(kind: ErrorKind, message: string, options: MapleErrorOptions = {}) {
        super(message, { cause: options.cause });
        this.name = new.target.name;
        this.kind = kind;
        this.param = options.param ?? null;
        this.code = options.code ?? null;
        this.retryAfterSeconds = options.retryAfterSeconds;
    }
}

export class InvalidRequestError extends MapleError {
    constructor(message: string, param: string | null = null, code: string | null = null) {
        super("invalid_request", message, { param, code });
    }
}

/** A GBNF grammar llama.cpp's parser refused (the client's `grammar`, or one Maple built: then the core makes it a ServerError). */
export class InvalidGrammarError extends InvalidRequestError {
    constructor(detail: string) {
        super(`Invalid grammar: ${detail}`, "grammar");
    }
}

export class ContextLengthExceededError extends MapleError {
    constructor(message: string, param = "messages") {
        super("invalid_request", message, { param, code: "context_length_exceeded" });
    }
}

export class PayloadTooLargeError extends MapleError {
    constructor(message: string) {
        super("payload_too_large", message, { param: "body", code: "payload_too_large" });
    }
}

/** A body that is not UTF-8 JSON by its Content-Type (RFC 8259: JSON is UTF-8). */
export class UnsupportedMediaTypeError extends MapleError {
    constructor(message = "Unsupported Content-Type: send 'Content-Type: application/json' (UTF-8).") {
        super("unsupported_media_type", message, { param: "Content-Type", code: "unsupported_media_type" });
    }
}

export class AuthenticationError extends MapleError {
    constructor(message = "Invalid or missing API key. Send it as 'Authorization: Bearer <key>' or 'X-Api-Key: <key>'.") {
        super("authentication", message, { code: "invalid_api_key" });
    }
}

export class NotFoundError extends MapleError {
    constructor(message: string, param: string | null = null, code: string | null = null) {
        super("not_found", message, { param, code });
    }
}

/** openai and the AI SDK honour Retry-After on 503 (see CLIENTS.md). */
const retryAfterSeconds = 5;

export class ModelLoadingError extends MapleError {
    constructor(message = "The model is still loading; retry shortly.") {
        super("unavailable", message, { code: "model_loading", retryAfterSeconds });
    }
}

/**
 * The model's last load failed (the server log says why): a 500 as before, with Retry-After for
 * when a request may try the load again (the model registry backs off between tries).
 */
export class ModelLoadFailedError extends MapleError {
    constructor(message: string, retryAfterSeconds: number) {
        super("server", message, { code: "model_load_failed", retryAfterSeconds });
    }
}

export class EngineOverloadedError extends MapleError {
    /** Which bound was hit: the queue depth, or the time a request may wait. */
    readonly reason: "queue_full" | "queue_timeout";

    constructor(message: string, reason: "queue_full" | "queue_timeout") {
        super("overloaded", message, { code: "engine_overloaded", retryAfterSeconds });
        this.reason = reason;
    }

    /** `waiting` requests already wait for a slot: the queue (MAPLE_MAX_QUEUE_DEPTH) is full. */
    static queueFull(waiting: number): EngineOverloadedError {
        return new EngineOverloadedError(`The server is busy: ${waiting} requests are already waiting (MAPLE_MAX_QUEUE_DEPTH). Retry later.`, "queue_full");
    }

    /** A request waited `waitedMs` (MAPLE_QUEUE_TIMEOUT) without getting a slot. */
    static queueTimeout(waitedMs: number): EngineOverloadedError {
        return new EngineOverloadedError(`Timed out after ${waitedMs / 1000} s waiting for a free slot (MAPLE_QUEUE_TIMEOUT). Retry later.`, "queue_timeout");
    }
}

export class ShuttingDownError extends MapleError {
    constructor(message = "The server is shutting down; retry on another instance or shortly.") {
        super("unavailable", message, { code: "server_shutting_down", retryAfterSeconds });
    }
}

/**
 * The shared response store (MAPLE_RESPONSES_STORE, Redis) cannot be reached or did not confirm
 * in time: a request that must store its response or read a stored one is refused (503, before
 * any generation when the store is known to be down), never answered as if it were stored.
 */
export class StoreUnavailableError extends MapleError {
    constructor(message = "The response store (MAPLE_RESPONSES_STORE) is unreachable; retry shortly, or send store: false without previous_response_id.", cause?: unknown) {
        super("unavailable", message, { code: "store_unavailable", retryAfterSeconds: 2, cause });
    }
}

export class ServerError extends MapleError {
    constructor(message = "The server had an error while processing your request.", cause?: unknown) {
        super("server", message, { cause });
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

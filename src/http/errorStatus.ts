import { MapleError, type ErrorKind } from "../errors.js";

/** The HTTP status of each kind of domain error (a wire format may answer some differently, e.g. Anthropic's 529). */
const statusOfKind: Record<ErrorKind, number> = {
    invalid_request: 400,
    authentication: 401,
    not_found: 404,
    request_timeout: 408,
    payload_too_large: 413,
    unsupported_media_type: 415,
    headers_too_large: 431,
    server: 500,
    overloaded: 503,
    unavailable: 503
};

/** A client error Fastify raised with a 4xx status of its own, passed through with that status. */
export class FastifyClientError extends MapleError {
    constructor(readonly status: number, message: string) {
        super("invalid_request", message);
    }
}

export function httpStatus(error: MapleError): number {
    return error instanceof FastifyClientError ? error.status : statusOfKind[error.kind];
}

/** `Retry-After` (seconds) on a transient error: openai, the AI SDK and Anthropic's SDK honour it. */
export function retryHeaders(error: MapleError): Record<string, string> {
    return error.retryAfterSeconds === undefined ? {} : { "retry-after": String(error.retryAfterSeconds) };
}

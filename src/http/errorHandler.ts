import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { ConnectionError, FastifyError, FastifyReply, FastifyRequest } from "fastify";
import {
    InvalidRequestError, isAbortError, MapleError, PayloadTooLargeError, ServerError, UnsupportedMediaTypeError
} from "../errors.js";
import { errorFormatOf, openAiErrorFormat } from "./errorFormat.js";
import { FastifyClientError, httpStatus } from "./errorStatus.js";

/** Fastify's own client errors (body reading, limits, URLs), in Maple's error shape. JSON parsing is ours (jsonBody.ts). */
function fromFastifyError(error: FastifyError): MapleError | undefined {
    switch (error.code) {
        case "FST_ERR_CTP_BODY_TOO_LARGE":
            return new PayloadTooLargeError("The request body is larger than the limit (MAPLE_MAX_BODY_BYTES).");
        case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
            return new UnsupportedMediaTypeError();
        case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
            return new InvalidRequestError("The Content-Length header does not match the body.", "Content-Length");
        case "FST_ERR_BAD_URL":
            return new InvalidRequestError("The URL has a percent-escape that does not decode (such as %E0%A4%A).", "url");
        default:
            break;
    }
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
        return new FastifyClientError(error.statusCode, error.message);
    }
    return undefined;
}

/** Any thrown value → the MapleError a client sees; unexpected ones become a bare server_error. */
export function toMapleError(error: unknown): MapleError {
    if (error instanceof MapleError) return error;
    if (error instanceof Error && typeof (error as FastifyError).code === "string") {
        const mapped = fromFastifyError(error as FastifyError);
        if (mapped !== undefined) return mapped;
    }
    return new ServerError();
}

/**
 * The one place errors become responses, in the shape of the route's wire format (see
 * `ErrorFormat`; OpenAI's unless the route sets another). Client errors are logged at info without
 * a stack; anything else is logged with its stack and answered without internals. Fastify's
 * `frameworkErrors` (a URL that does not decode) come here too.
 */
export function errorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
    if (isAbortError(error)) {
        // The client is gone: nobody reads this answer. nginx's 499 marks it in the access log.
        request.log.info("client went away before its response");
        void reply.code(499).send();
        return;
    }
    const mapped = toMapleError(error);
    const status = httpStatus(mapped);
    // A 5xx Maple raised on purpose (loading, overloaded, shutting down) has a code and needs no stack.
    if (status >= 500 && !(error instanceof MapleError && error.code !== null)) {
        request.log.error({ err: error }, "request failed");
    } else {
        request.log.info({ status, code: mapped.code, param: mapped.param }, mapped.message);
    }
    const answer = errorFormatOf(request).response(mapped);
    void reply.code(answer.status).headers(answer.headers).type("application/json").send(answer.body);
}

/** Node's HTTP parser errors, before any route runs: Fastify's default answers these in its own shape. */
function fromConnectionError(error: ConnectionError): MapleError {
    switch (error.code) {
        case "ERR_HTTP_REQUEST_TIMEOUT":
            return new MapleError("request_timeout", "The request did not arrive in time: its headers or body were too slow.",
                { code: "request_timeout" });
        case "HPE_HEADER_OVERFLOW":
            return new MapleError("headers_too_large", "The request headers are too large.", { param: "headers", code: "headers_too_large" });
        default:
            return new InvalidRequestError("The HTTP request could not be parsed.", null, "malformed_http");
    }
}

/**
 * Fastify's `clientErrorHandler`: a request Node could not parse, or one too slow to arrive
 * (headersTimeout / requestTimeout), gets an OpenAI-shaped answer (no route is known yet) and the connection is closed.
 */
export function clientErrorHandler(this: { log: FastifyRequest["log"] }, error: ConnectionError, socket: Socket): void {
    // A reset connection has nobody to answer (Fastify's default does the same).
    if (error.code === "ECONNRESET" || socket.destroyed) return;
    const answer = openAiErrorFormat.response(fromConnectionError(error));
    this.log.info({ status: answer.status, code: error.code }, "client error before routing");
    if (socket.writable) {
        const body = JSON.stringify(answer.body);
        socket.write(`HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ""}\r\n`
            + `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    }
    socket.destroy(error);
}

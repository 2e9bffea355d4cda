import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { InvalidRequestError, isAbortError, MapleError, PayloadTooLargeError, ServerError } from "../errors.js";

/** Fastify's own client errors (body parsing, limits), in Maple's error shape. */
function fromFastifyError(error: FastifyError): MapleError | undefined {
    switch (error.code) {
        case "FST_ERR_CTP_INVALID_JSON_BODY":
        case "FST_ERR_CTP_EMPTY_JSON_BODY":
            return new InvalidRequestError(`We could not parse the JSON body of your request: ${error.message}`, "body");
        case "FST_ERR_CTP_BODY_TOO_LARGE":
            return new PayloadTooLargeError(`The request body is larger than the limit (MAPLE_MAX_BODY_BYTES).`);
        case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
            return new MapleError(415, "invalid_request_error", "Unsupported Content-Type: send 'Content-Type: application/json'.",
                { param: "Content-Type", code: "unsupported_media_type" });
        case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
            return new InvalidRequestError("The Content-Length header does not match the body.", "Content-Length");
        default:
            break;
    }
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
        return new MapleError(error.statusCode, "invalid_request_error", error.message);
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
    if (error instanceof SyntaxError) return new InvalidRequestError(`We could not parse the JSON body of your request: ${error.message}`, "body");
    return new ServerError();
}

/**
 * The one place errors become OpenAI-shaped responses. Client errors are logged at info without a
 * stack; anything else is logged with its stack and answered without internals.
 */
export function errorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
    if (isAbortError(error)) {
        // The client is gone: nobody reads this answer. nginx's 499 marks it in the access log.
        request.log.info("client went away before its response");
        void reply.code(499).send();
        return;
    }
    const mapped = toMapleError(error);
    if (mapped.status >= 500 && !(error instanceof MapleError && error.status >= 500 && error.code !== null)) {
        request.log.error({ err: error }, "request failed");
    } else {
        request.log.info({ status: mapped.status, code: mapped.code, param: mapped.param }, mapped.message);
    }
    void reply.code(mapped.status).headers(mapped.headers).type("application/json").send(mapped.toJSON());
}

import type { FastifyRequest } from "fastify";
import type { MapleError } from "../errors.js";
import { openAiErrorBody } from "../openai/errorBody.js";
import { httpStatus, retryHeaders } from "./errorStatus.js";
import type { SseEvent } from "./sse.js";

/**
 * How one wire format answers a domain error: as an HTTP response before the first byte, or as
 * events inside a stream that already began. A route of another wire format sets its own in its
 * route options, `{config: {errorFormat}}`; every other route (and every request that matched no
 * route) answers in OpenAI's shape.
 */
export interface ErrorFormat {
    response(error: MapleError): { status: number; headers: Record<string, string>; body: unknown };
    /** The events that report `error` in a started stream (the stream's writer then ends it); a promise when they must first be stored. */
    streamEvents(error: MapleError): SseEvent[] | Promise<SseEvent[]>;
}

declare module "fastify" {
    interface FastifyContextConfig {
        /** This route's error shape; OpenAI's when unset. */
        errorFormat?: ErrorFormat;
    }
}

/** `{"error": {message, type, param, code}}` with the kind's status and Retry-After on transient errors. */
export const openAiErrorFormat: ErrorFormat = {
    response: (error) => ({ status: httpStatus(error), headers: retryHeaders(error), body: openAiErrorBody(error) }),
    streamEvents: (error) => [{ data: openAiErrorBody(error) }]
};

/** The error format of the route `request` matched. */
export function errorFormatOf(request: FastifyRequest): ErrorFormat {
    let config: { errorFormat?: ErrorFormat } | undefined;
    try {
        config = request.routeOptions.config;
    } catch {
        // A framework error (a URL that does not decode) comes before any route context exists.
        config = undefined;
    }
    return config?.errorFormat ?? openAiErrorFormat;
}

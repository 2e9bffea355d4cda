import type { FastifyReply, FastifyRequest } from "fastify";

/**
 * Why a request's generation may stop early. `signal` runs from the HTTP request down to the
 * engine; the two causes are kept apart because they end differently: a client that went away
 * gets nothing more (a quiet log line), a shutdown tells the client with an error.
 */
export interface RequestCancellation {
    signal: AbortSignal;
    clientGone: AbortSignal;
    shutdown: AbortSignal;
}

/** Fires `clientGone` when the client disconnects before its response is complete. */
export function requestCancellation(request: FastifyRequest, reply: FastifyReply, shutdown: AbortSignal): RequestCancellation {
    const controller = new AbortController();
    const onClose = (): void => {
        if (!reply.raw.writableFinished) {
            request.log.info("client disconnected; cancelling its generation");
            controller.abort();
        }
    };
    reply.raw.once("close", onClose);
    return { signal: AbortSignal.any([controller.signal, shutdown]), clientGone: controller.signal, shutdown };
}

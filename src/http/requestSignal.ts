import type { FastifyReply, FastifyRequest } from "fastify";

/**
 * An AbortSignal that fires when the client goes away before its response is complete: the start
 * of the one signal that runs from the HTTP request down to the engine.
 */
export function clientGoneSignal(request: FastifyRequest, reply: FastifyReply): AbortSignal {
    const controller = new AbortController();
    const onClose = (): void => {
        if (!reply.raw.writableFinished) {
            request.log.info("client disconnected; cancelling its generation");
            controller.abort();
        }
    };
    reply.raw.once("close", onClose);
    return controller.signal;
}

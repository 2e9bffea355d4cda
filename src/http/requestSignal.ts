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

/**
 * Fires `clientGone` when the client disconnects before its response is complete; `signal` fires
 * with it or with `shutdown`. Not `AbortSignal.any([clientGone, shutdown])`: on Node 20 each signal
 * it makes stays registered on its sources (a WeakRef, never pruned), and `shutdown` lives as long
 * as the server, so every request left ~58 bytes behind for good (11 MB per 200k requests,
 * test/http/requestSignal.test.ts). A listener on `shutdown`, removed when the response closes
 * (complete or not), leaves nothing once the request is over.
 */
export function requestCancellation(request: FastifyRequest, reply: FastifyReply, shutdown: AbortSignal): RequestCancellation {
    const clientGone = new AbortController();
    const either = new AbortController();
    const onShutdown = (): void => either.abort(shutdown.reason);
    const onClose = (): void => {
        shutdown.removeEventListener("abort", onShutdown);
        if (!reply.raw.writableFinished) {
            request.log.info("client disconnected; cancelling its generation");
            clientGone.abort();
            // After clientGone, so that whoever `signal` wakes sees the client's leaving as the cause.
            either.abort(clientGone.signal.reason);
        }
    };
    if (shutdown.aborted) onShutdown();
    else shutdown.addEventListener("abort", onShutdown, { once: true });
    // A client gone before the handler ran (its close already emitted) is gone now.
    if (reply.raw.closed) onClose();
    else reply.raw.once("close", onClose);
    return { signal: either.signal, clientGone: clientGone.signal, shutdown };
}

import type { FastifyReply, FastifyRequest } from "fastify";
import type { Generation, GenerationPart, Usage } from "../core/index.js";
import { isAbortError, RequestAbortedError, ShuttingDownError, type MapleError } from "../errors.js";
import { errorFormatOf, type ErrorFormat } from "./errorFormat.js";
import { toMapleError } from "./errorHandler.js";
import type { RequestCancellation } from "./requestSignal.js";
import { SseStream, type SseEvent } from "./sse.js";

/** An abort is the client's doing (nobody to answer) unless the server is shutting down. */
function abortError(cancellation: RequestCancellation): Error {
    return cancellation.shutdown.aborted && !cancellation.clientGone.aborted ? new ShuttingDownError() : new RequestAbortedError();
}

/**
 * Runs a generation to its end for a non-streaming response; `onPart` sees every part of each
 * choice. Resolves with the request's usage; an abort rejects as the client's leaving
 * (RequestAbortedError, answered by nobody) or the server's shutdown (ShuttingDownError).
 */
export async function collectGeneration(generation: Generation, cancellation: RequestCancellation,
    onPart: (choice: number, part: GenerationPart) => void | Promise<void>): Promise<Usage> {
    try {
        return await generation.run(onPart);
    } catch (error) {
        if (isAbortError(error)) throw abortError(cancellation);
        throw error;
    } finally {
        generation.close();
    }
}

/** The events of one streamed response, in its wire format. Pure: each returns the events to send. */
export interface StreamWriter<Event extends SseEvent = SseEvent> {
    /** Before the first part (OpenAI: each choice's role chunk; Anthropic: `message_start`). */
    start(): Event[];
    /** One part of choice `choice`, in order (a writer that must first store something returns a promise). */
    part(choice: number, part: GenerationPart): Event[] | Promise<Event[]>;
    /** Every choice finished; `usage` is the request's (OpenAI: the usage chunk). */
    end(usage: Usage): Event[];
    /** Sent as it is (not JSON) on a last `data:` line, after `end` or an error (OpenAI's `[DONE]`). */
    readonly lastData?: string;
    /**
     * Events sent every `intervalMs` until the first part arrives, while the prompt is evaluated
     * (Anthropic's `ping`), so clients and proxies see the stream alive. None by default.
     */
    readonly keepAlive?: { intervalMs: number; events(): SseEvent[] };
}

/** Folds a stream's events into the whole response they describe (what an SDK does with a stream). */
export interface StreamFold<Event extends SseEvent, Whole> {
    add(events: readonly Event[]): void;
    build(): Whole;
}

/**
 * The non-streaming response: the generation run through the same `writer` as a stream, its
 * events folded by `fold` instead of sent, so the whole response and the stream cannot differ.
 * Rejects as `collectGeneration`.
 */
export async function foldGeneration<Event extends SseEvent, Whole>(generation: Generation, cancellation: RequestCancellation,
    writer: StreamWriter<Event>, fold: StreamFold<Event, Whole>): Promise<Whole> {
    fold.add(writer.start());
    const usage = await collectGeneration(generation, cancellation, (choice, part) => {
        const events = writer.part(choice, part);
        // Only a writer that stores something returns a promise: the per-token path stays synchronous.
        if (Array.isArray(events)) fold.add(events);
        else return events.then((stored) => fold.add(stored));
    });
    fold.add(writer.end(usage));
    return fold.build();
}

/**
 * Streams a generation as SSE. After the first byte an error can only be in-band: the route's
 * error format's events, then the stream's end. A client that went away just ends the stream (its
 * signal already stopped the engine), with no error event and a quiet log line.
 */
export async function streamGeneration(request: FastifyRequest, reply: FastifyReply, cancellation: RequestCancellation,
    generation: Generation, writer: StreamWriter<SseEvent>, errorFormat: ErrorFormat = errorFormatOf(request)): Promise<void> {
    const sse = SseStream.start(reply);
    const sendAll = async (events: SseEvent[]): Promise<void> => {
        for (const event of events) await sse.send(event);
    };
    let keepAlive: NodeJS.Timeout | undefined;
    const stopKeepAlive = (): void => clearInterval(keepAlive);
    try {
        await sendAll(writer.start());
        const alive = writer.keepAlive;
        if (alive !== undefined) keepAlive = setInterval(() => void sendAll(alive.events()), alive.intervalMs);
        const usage = await generation.run(async (choice, part) => {
            stopKeepAlive();
            await sendAll(await writer.part(choice, part));
        });
        await sendAll(writer.end(usage));
        await sse.finish(writer.lastData);
    } catch (error) {
        const failure = midStreamFailure(request, cancellation, error);
        if (failure === undefined) {
            sse.end();
            return;
        }
        await sendAll(await errorFormat.streamEvents(failure));
        await sse.finish(writer.lastData);
    } finally {
        stopKeepAlive();
        generation.close();
    }
}

/**
 * What a stream that failed after its first byte says in-band, logged once; undefined when the
 * client went away (its signal already stopped the engine: a normal end, nobody to tell).
 */
export function midStreamFailure(request: FastifyRequest, cancellation: RequestCancellation, error: unknown): MapleError | undefined {
    if (cancellation.clientGone.aborted) return undefined;
    const failure = isAbortError(error) ? abortError(cancellation) : error;
    // With the client still there, an abort is the server's own doing: its shutdown, or a
    // cancel asked for on another request (POST /v1/responses/{id}/cancel). Neither is a fault.
    if (failure instanceof RequestAbortedError) request.log.info("generation cancelled mid-stream");
    else if (!(failure instanceof ShuttingDownError)) request.log.error({ err: error }, "generation failed mid-stream");
    return toMapleError(failure);
}

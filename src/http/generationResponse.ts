import type { FastifyReply, FastifyRequest } from "fastify";
import { isAbortError, RequestAbortedError } from "../errors.js";
import type { GenerationSummary, TextGeneration } from "../generation/generateText.js";
import { toMapleError } from "./errorHandler.js";
import { SseStream } from "./sse.js";

/** Runs a generation to its end for a non-streaming response; `onText` sees every piece of text. */
export async function collectGeneration(generation: TextGeneration, onText: (text: string) => void): Promise<GenerationSummary> {
    try {
        let next = await generation.pieces.next();
        for (; !next.done; next = await generation.pieces.next()) onText(next.value.text);
        return next.value;
    } catch (error) {
        if (isAbortError(error)) throw new RequestAbortedError();
        throw error;
    } finally {
        generation.close();
    }
}

/** The events of one streamed response, in OpenAI's chunk shapes. */
export interface StreamEvents {
    start(): unknown[];
    text(text: string): unknown[];
    end(summary: GenerationSummary): unknown[];
}

/**
 * Streams a generation as SSE. After the first byte an error can only be an in-band error event
 * followed by [DONE]; a client that went away just ends the stream (its signal already stopped
 * the engine), with no error event and a quiet log line.
 */
export async function streamGeneration(request: FastifyRequest, reply: FastifyReply, signal: AbortSignal,
    generation: TextGeneration, events: StreamEvents): Promise<void> {
    const sse = new SseStream(reply);
    const sendAll = async (chunks: unknown[]): Promise<void> => {
        for (const chunk of chunks) await sse.send(chunk);
    };
    try {
        await sendAll(events.start());
        let next = await generation.pieces.next();
        for (; !next.done; next = await generation.pieces.next()) await sendAll(events.text(next.value.text));
        await sendAll(events.end(next.value));
        await sse.done();
    } catch (error) {
        if (isAbortError(error) || signal.aborted) {
            sse.end();
            return;
        }
        request.log.error({ err: error }, "generation failed mid-stream");
        await sse.sendError(toMapleError(error));
        await sse.done();
    } finally {
        generation.close();
    }
}

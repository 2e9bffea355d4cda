import type { FastifyReply, FastifyRequest } from "fastify";
import { isAbortError, RequestAbortedError, ShuttingDownError } from "../errors.js";
import type { GeneratedPiece, GenerationSummary, TextGeneration } from "../generation/generateText.js";
import { toMapleError } from "./errorHandler.js";
import type { RequestCancellation } from "./requestSignal.js";
import { SseStream } from "./sse.js";

/** An abort is the client's doing (nobody to answer) unless the server is shutting down. */
function abortError(cancellation: RequestCancellation): Error {
    return cancellation.shutdown.aborted && !cancellation.clientGone.aborted ? new ShuttingDownError() : new RequestAbortedError();
}

/**
 * With MAPLE_LOG_PROMPTS, the prompt and the raw output are logged at debug level; otherwise logs
 * never contain them.
 */
export interface TextLog {
    request: FastifyRequest;
    prompt: string | number[];
}

/** One choice's output as one string; the choices of an n > 1 request as a list. */
function logText(log: TextLog | undefined, outputs: string[][]): void {
    const texts = outputs.map((output) => output.join(""));
    log?.request.log.debug({ prompt: log.prompt, output: texts.length === 1 ? texts[0] : texts }, "generation text");
}

/**
 * Runs the choices of one request side by side (the engine steps all running generations
 * together, so one consumed after the other would stall). `onPiece` and `onEnd` see each choice's
 * pieces and summary as they come. When a choice fails the others are cancelled, and the error
 * thrown is the failure rather than the cancellations it caused.
 */
async function runChoices(generations: readonly TextGeneration[], onPiece: (choice: number, piece: GeneratedPiece) => Promise<void> | void,
    onEnd: (choice: number, summary: GenerationSummary) => Promise<void> | void, log?: TextLog): Promise<GenerationSummary[]> {
    const outputs = generations.map((): string[] => []);
    const results = await Promise.allSettled(generations.map(async (generation, choice) => {
        try {
            let next = await generation.pieces.next();
            for (; !next.done; next = await generation.pieces.next()) {
                await onPiece(choice, next.value);
                if (log !== undefined) outputs[choice]!.push(next.value.text);
            }
            await onEnd(choice, next.value);
            return next.value;
        } catch (error) {
            generation.cancel();
            throw error;
        } finally {
            generation.close();
        }
    }));
    const failures = results.flatMap((result) => (result.status === "rejected" ? [result.reason as unknown] : []));
    if (failures.length > 0) throw failures.find((failure) => !isAbortError(failure)) ?? failures[0];
    logText(log, outputs);
    return results.map((result) => (result as PromiseFulfilledResult<GenerationSummary>).value);
}

/**
 * Runs the generations (the n choices of one request) to their end for a non-streaming response;
 * `onPiece` sees every piece of each choice.
 */
export async function collectGenerations(generations: readonly TextGeneration[], cancellation: RequestCancellation,
    onPiece: (choice: number, piece: GeneratedPiece) => void, log?: TextLog): Promise<GenerationSummary[]> {
    try {
        return await runChoices(generations, onPiece, () => undefined, log);
    } catch (error) {
        if (isAbortError(error)) throw abortError(cancellation);
        throw error;
    }
}

/** The events of one streamed response, in OpenAI's chunk shapes. */
export interface StreamEvents {
    start(): unknown[];
    /** One generated token of choice `choice` (its text may be empty). */
    piece(choice: number, piece: GeneratedPiece): unknown[];
    /** Choice `choice` ended (its finish chunk). */
    end(choice: number, summary: GenerationSummary): unknown[];
    /** Every choice ended (the usage chunk). */
    done(summaries: readonly GenerationSummary[]): unknown[];
}

/**
 * Streams a generation as SSE. After the first byte an error can only be an in-band error event
 * followed by [DONE]; a client that went away just ends the stream (its signal already stopped
 * the engine), with no error event and a quiet log line.
 */
export async function streamGenerations(request: FastifyRequest, reply: FastifyReply, cancellation: RequestCancellation,
    generations: readonly TextGeneration[], events: StreamEvents, log?: TextLog): Promise<void> {
    const sse = new SseStream(reply);
    // Each chunk is one write, so the choices' chunks interleave whole.
    const sendAll = async (chunks: unknown[]): Promise<void> => {
        for (const chunk of chunks) await sse.send(chunk);
    };
    try {
        await sendAll(events.start());
        const summaries = await runChoices(generations,
            (choice, piece) => sendAll(events.piece(choice, piece)),
            (choice, summary) => sendAll(events.end(choice, summary)), log);
        await sendAll(events.done(summaries));
        await sse.done();
    } catch (error) {
        if (cancellation.clientGone.aborted) {
            sse.end();
            return;
        }
        const failure = isAbortError(error) ? abortError(cancellation) : error;
        if (!(failure instanceof ShuttingDownError)) request.log.error({ err: error }, "generation failed mid-stream");
        await sse.sendError(toMapleError(failure));
        await sse.done();
    } finally {
        for (const generation of generations) generation.close();
    }
}

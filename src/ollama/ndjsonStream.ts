import type { FastifyReply, FastifyRequest } from "fastify";
import type { Generation, GenerationPart } from "../core/index.js";
import { isAbortError, RequestAbortedError, ShuttingDownError } from "../errors.js";
import { toMapleError } from "../http/errorHandler.js";
import { collectGeneration } from "../http/generationResponse.js";
import type { RequestCancellation } from "../http/requestSignal.js";
import type { SseResponse } from "../http/sse.js";
import { ollamaErrorBody } from "./errorFormat.js";
import { OllamaChunkFolder, type OllamaChunk, type OllamaChunkWriter } from "./responseChunks.js";

/**
 * A newline-delimited JSON response (`application/x-ndjson`, Ollama's streaming format): one
 * object per line, each one write. A write into a full socket waits for it to drain or close, so
 * a slow reader slows generation instead of growing memory.
 */
export class NdjsonStream {
    private finished = false;

    /** Takes over the reply from Fastify and sends the stream's headers. */
    static start(reply: FastifyReply): NdjsonStream {
        reply.hijack();
        return new NdjsonStream(reply.raw);
    }

    constructor(private readonly response: SseResponse) {
        response.writeHead(200, { "content-type": "application/x-ndjson", "cache-control": "no-cache", "x-accel-buffering": "no" });
    }

    async send(value: unknown): Promise<void> {
        const response = this.response;
        if (this.finished || response.destroyed || response.writableEnded) return;
        if (!response.write(`${JSON.stringify(value)}\n`) && !response.destroyed) await this.drained();
    }

    end(): void {
        if (this.finished) return;
        this.finished = true;
        this.response.end();
    }

    private drained(): Promise<void> {
        return new Promise((resolve) => {
            const settle = (): void => {
                this.response.off("drain", settle);
                this.response.off("close", settle);
                resolve();
            };
            this.response.on("drain", settle);
            this.response.on("close", settle);
        });
    }
}

/**
 * Streams a generation as NDJSON, each part turned into objects by `write`. After the first byte
 * an error can only be in-band: one `{"error": "…"}` line (Ollama's way; its client throws on it),
 * then the end. A client that went away just ends the stream (its signal already stopped the
 * engine), with a quiet log line. The same contract as `streamGeneration` for SSE.
 */
export async function streamNdjsonGeneration(request: FastifyRequest, reply: FastifyReply, cancellation: RequestCancellation,
    generation: Generation, write: (part: GenerationPart) => unknown[]): Promise<void> {
    const stream = NdjsonStream.start(reply);
    try {
        await generation.run(async (_choice, part) => {
            for (const value of write(part)) await stream.send(value);
        });
    } catch (error) {
        if (!cancellation.clientGone.aborted) {
            const failure = isAbortError(error) ? (cancellation.shutdown.aborted ? new ShuttingDownError() : new RequestAbortedError()) : error;
            if (failure instanceof RequestAbortedError) request.log.info("generation cancelled mid-stream");
            else if (!(failure instanceof ShuttingDownError)) request.log.error({ err: error }, "generation failed mid-stream");
            await stream.send(ollamaErrorBody(toMapleError(failure)));
        }
    } finally {
        stream.end();
        generation.close();
    }
}

/** Streams the writer's objects as NDJSON, or (`stream: false`) answers them folded into one. */
export async function answerGeneration(request: FastifyRequest, reply: FastifyReply, cancellation: RequestCancellation,
    generation: Generation, writer: OllamaChunkWriter, stream: boolean): Promise<OllamaChunk | undefined> {
    if (stream) {
        await streamNdjsonGeneration(request, reply, cancellation, generation, (part) => writer.part(part));
        return undefined;
    }
    const folder = new OllamaChunkFolder();
    await collectGeneration(generation, cancellation, (_choice, part) => folder.add(writer.part(part)));
    return folder.build();
}

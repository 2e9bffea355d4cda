import type { FastifyReply, FastifyRequest } from "fastify";
import type { Generation, GenerationPart } from "../core/index.js";
import { collectGeneration, midStreamFailure } from "../http/generationResponse.js";
import type { RequestCancellation } from "../http/requestSignal.js";
import { StreamingResponse, type StreamingSink, type WriteDeadline } from "../http/streamingResponse.js";
import { ollamaErrorBody } from "./errorFormat.js";
import { OllamaChunkFolder, type OllamaChunk, type OllamaChunkWriter } from "./responseChunks.js";

/** A newline-delimited JSON response (`application/x-ndjson`, Ollama's streaming format): one object per line, each one write. */
export class NdjsonStream {
    private readonly out: StreamingResponse;

    /** Takes over the reply from Fastify and sends the stream's headers. */
    static start(reply: FastifyReply): NdjsonStream {
        reply.hijack();
        return new NdjsonStream(reply.raw, StreamingResponse.deadlineFor(reply));
    }

    constructor(response: StreamingSink, deadline?: WriteDeadline) {
        this.out = new StreamingResponse(response, { "content-type": "application/x-ndjson" }, deadline);
    }

    send(value: unknown): Promise<void> {
        return this.out.write(`${JSON.stringify(value)}\n`);
    }

    end(): void {
        this.out.end();
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
        const failure = midStreamFailure(request, cancellation, error);
        if (failure !== undefined) await stream.send(ollamaErrorBody(failure));
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

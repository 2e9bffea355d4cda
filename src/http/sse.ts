import type { FastifyReply } from "fastify";
import { StreamingResponse, type StreamingSink, type WriteDeadline } from "./streamingResponse.js";

/** One Server-Sent Event: `event: NAME` (when named) and `data: JSON`. */
export interface SseEvent {
    /** The event's name (Anthropic's and the Responses API's `event:` lines); unnamed events are `message`. */
    event?: string;
    /** Serialised as JSON on one `data:` line. */
    data: unknown;
}

/** What the SSE writer needs from a response: Node's `ServerResponse` (a stand-in in tests). */
export type SseResponse = StreamingSink;

/** A Server-Sent Events response, on a backpressured `StreamingResponse`. */
export class SseStream {
    private readonly out: StreamingResponse;

    /** Takes over the reply from Fastify and sends the stream's headers. */
    static start(reply: FastifyReply): SseStream {
        reply.hijack();
        return new SseStream(reply.raw, StreamingResponse.deadlineFor(reply));
    }

    constructor(response: SseResponse, deadline?: WriteDeadline) {
        this.out = new StreamingResponse(response, { "content-type": "text/event-stream; charset=utf-8" }, deadline);
    }

    async send(event: SseEvent): Promise<void> {
        const data = `data: ${JSON.stringify(event.data)}\n\n`;
        await this.out.write(event.event === undefined ? data : `event: ${event.event}\n${data}`);
    }

    /**
     * Ends the stream; `lastData`, when given, is sent first as a `data:` line as it is (OpenAI's
     * `[DONE]`, which is not JSON).
     */
    async finish(lastData?: string): Promise<void> {
        if (lastData !== undefined) await this.out.write(`data: ${lastData}\n\n`);
        this.end();
    }

    /** Ends the response, e.g. after the client went away. */
    end(): void {
        this.out.end();
    }
}

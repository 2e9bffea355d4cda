import type { FastifyReply } from "fastify";
import { StreamingResponse, type StreamingSink } from "./streamingResponse.js";

/** One Server-Sent Event: `event: NAME` (when named) and `data: JSON`. */
export interface SseEvent {
    /** The event's name (Anthropic's and the Responses API's `event:` lines); unnamed events are `message`. */
    event?: string;
    /** Serialised as JSON on one `data:` line. */
    data: unknown;
}

/** What the SSE writer needs from a response: Node's `ServerResponse` (a stand-in in tests). */
export type SseResponse = StreamingSink;

function eventText(event: SseEvent): string {
    const data = `data: ${JSON.stringify(event.data)}\n\n`;
    return event.event === undefined ? data : `event: ${event.event}\n${data}`;
}

/** A Server-Sent Events response, on a backpressured `StreamingResponse`. */
export class SseStream {
    private readonly out: StreamingResponse;

    /** Takes over the reply from Fastify and sends the stream's headers. */
    static start(reply: FastifyReply): SseStream {
        reply.hijack();
        return new SseStream(reply.raw);
    }

    constructor(response: SseResponse) {
        this.out = new StreamingResponse(response, { "content-type": "text/event-stream; charset=utf-8" });
    }

    /** Sends one event; a promise only when the socket is full (see StreamingResponse.write). */
    send(event: SseEvent): Promise<void> | undefined {
        return this.out.write(eventText(event));
    }

    /** Sends the events in order; a promise only once one of them meets a full socket. */
    sendAll(events: readonly SseEvent[]): Promise<void> | undefined {
        return this.out.writeEach(events, eventText);
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

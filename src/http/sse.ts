import type { FastifyReply } from "fastify";

/** One Server-Sent Event: `event: NAME` (when named) and `data: JSON`. */
export interface SseEvent {
    /** The event's name (Anthropic's and the Responses API's `event:` lines); unnamed events are `message`. */
    event?: string;
    /** Serialised as JSON on one `data:` line. */
    data: unknown;
}

/** What the SSE writer needs from a response: Node's `ServerResponse` (a stand-in in tests). */
export interface SseResponse {
    writeHead(status: number, headers: Record<string, string>): unknown;
    write(chunk: string): boolean;
    end(): unknown;
    on(event: "drain" | "close", listener: () => void): unknown;
    off(event: "drain" | "close", listener: () => void): unknown;
    readonly destroyed: boolean;
    readonly writableEnded: boolean;
}

/**
 * A Server-Sent Events response. Each event is one write, so the events of choices generated side
 * by side interleave whole; a write into a full socket waits for it to drain (or close), so a
 * slow reader slows generation instead of growing memory.
 */
export class SseStream {
    private finished = false;

    /** Takes over the reply from Fastify and sends the stream's headers. */
    static start(reply: FastifyReply): SseStream {
        reply.hijack();
        return new SseStream(reply.raw);
    }

    constructor(private readonly response: SseResponse) {
        response.writeHead(200, {
            "content-type": "text/event-stream; charset=utf-8",
            "cache-control": "no-cache",
            // No Connection header of our own: Node sends keep-alive, or close when the client asked
            // for it (an explicit keep-alive here kept such sockets open until keepAliveTimeout).
            // Proxies such as nginx would otherwise buffer the stream.
            "x-accel-buffering": "no"
        });
    }

    async send(event: SseEvent): Promise<void> {
        const data = `data: ${JSON.stringify(event.data)}\n\n`;
        await this.write(event.event === undefined ? data : `event: ${event.event}\n${data}`);
    }

    /**
     * Ends the stream; `lastData`, when given, is sent first as a `data:` line as it is (OpenAI's
     * `[DONE]`, which is not JSON).
     */
    async finish(lastData?: string): Promise<void> {
        if (lastData !== undefined) await this.write(`data: ${lastData}\n\n`);
        this.end();
    }

    /** Ends the response, e.g. after the client went away. */
    end(): void {
        if (this.finished) return;
        this.finished = true;
        this.response.end();
    }

    private async write(text: string): Promise<void> {
        const response = this.response;
        if (this.finished || response.destroyed || response.writableEnded) return;
        if (!response.write(text) && !response.destroyed) await this.drained();
    }

    /** Resolves at `drain` or `close`, whichever comes first, and removes both listeners either way. */
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

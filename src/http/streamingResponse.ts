import type { FastifyReply } from "fastify";

/** What a streaming response needs from Node's `ServerResponse` (a stand-in in tests). */
export interface StreamingSink {
    writeHead(status: number, headers: Record<string, string>): unknown;
    write(chunk: string): boolean;
    end(): unknown;
    on(event: "drain" | "close", listener: () => void): unknown;
    off(event: "drain" | "close", listener: () => void): unknown;
    readonly destroyed: boolean;
    readonly writableEnded: boolean;
}

/**
 * A response written piece by piece (SSE, NDJSON). Each piece is one write, so the events of
 * choices generated side by side interleave whole; a write into a full socket waits for it to
 * drain (or close), so a slow reader slows generation instead of growing memory.
 */
export class StreamingResponse {
    private finished = false;

    /** Takes over the reply from Fastify and sends the stream's headers. */
    static start(reply: FastifyReply, headers: Record<string, string>): StreamingResponse {
        reply.hijack();
        return new StreamingResponse(reply.raw, headers);
    }

    constructor(private readonly response: StreamingSink, headers: Record<string, string>) {
        // No Connection header of our own: Node sends keep-alive, or close when the client asked
        // for it (an explicit keep-alive here kept such sockets open until keepAliveTimeout).
        // x-accel-buffering: proxies such as nginx would otherwise buffer the stream.
        response.writeHead(200, { ...headers, "cache-control": "no-cache", "x-accel-buffering": "no" });
    }

    async write(text: string): Promise<void> {
        const response = this.response;
        if (this.finished || response.destroyed || response.writableEnded) return;
        if (!response.write(text) && !response.destroyed) await this.drained();
    }

    /** Ends the response (also after the client went away); later writes are dropped. */
    end(): void {
        if (this.finished) return;
        this.finished = true;
        this.response.end();
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

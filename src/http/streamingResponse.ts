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

    /**
     * Writes `text`. A promise (resolved at `drain` or `close`) only when the socket is full, so
     * the callback that writes each token allocates and awaits nothing otherwise: what the main
     * thread allocates a token it pays again in page faults, on the cores llama.cpp decodes on
     * (bench/README.md, "Fewer awaits a token").
     */
    write(text: string): Promise<void> | undefined {
        const response = this.response;
        if (this.finished || response.destroyed || response.writableEnded) return undefined;
        if (!response.write(text) && !response.destroyed) return this.drained();
        return undefined;
    }

    /** Writes each item's text in order, as `write`: a promise only once one of them meets a full socket. */
    writeEach<T>(items: readonly T[], text: (item: T) => string, from = 0): Promise<void> | undefined {
        for (let index = from; index < items.length; index++) {
            const drained = this.write(text(items[index]!));
            if (drained !== undefined) return drained.then(() => this.writeEach(items, text, index + 1));
        }
        return undefined;
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

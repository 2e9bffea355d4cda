import type { FastifyReply } from "fastify";

/** What a streaming response needs from Node's `ServerResponse` (a stand-in in tests). */
export interface StreamingSink {
    writeHead(status: number, headers: Record<string, string>): unknown;
    write(chunk: string): boolean;
    end(): unknown;
    on(event: "drain" | "close", listener: () => void): unknown;
    off(event: "drain" | "close", listener: () => void): unknown;
    /** Closes the connection at once (Node: the socket), which fires `close`. */
    destroy(): unknown;
    readonly destroyed: boolean;
    readonly writableEnded: boolean;
}

/**
 * How long one write may wait for the client to read (`--write-timeout`), and what to do when it
 * expires. A client that stops reading (a closed laptop lid, a proxy that buffers, a stuck
 * consumer) otherwise holds its slot for as long as its socket stays open: llama-server bounds
 * the same wait with its `--timeout` (600 s).
 */
export interface WriteDeadline {
    /** 0: no deadline. */
    ms: number;
    /** Called once, before the connection is closed. */
    onExpired(): void;
}

declare module "fastify" {
    interface FastifyInstance {
        /** The write deadline of every streamed response of this app (set by buildApp). */
        streamWriteDeadline?: (reply: FastifyReply) => WriteDeadline;
    }
}

/**
 * A response written piece by piece (SSE, NDJSON). Each piece is one write, so the events of
 * choices generated side by side interleave whole; a write into a full socket waits for it to
 * drain (or close), so a slow reader slows generation instead of growing memory. A wait longer
 * than the write deadline closes the connection: the request's signal then cancels its
 * generation as for any client that left, and the slot is freed.
 */
export class StreamingResponse {
    private finished = false;

    /** The write deadline the app gives its streams (none outside an app that sets one). */
    static deadlineFor(reply: FastifyReply): WriteDeadline | undefined {
        return reply.server.streamWriteDeadline?.(reply);
    }

    constructor(private readonly response: StreamingSink, headers: Record<string, string>, private readonly deadline?: WriteDeadline) {
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

    /**
     * Resolves at `drain` or `close`, whichever comes first, and removes both listeners either way;
     * past the deadline, closes the connection (which fires `close`).
     */
    private drained(): Promise<void> {
        return new Promise((resolve) => {
            const deadline = this.deadline;
            const timer = deadline === undefined || deadline.ms <= 0 ? undefined : setTimeout(() => {
                deadline.onExpired();
                this.response.destroy();
            }, deadline.ms);
            const settle = (): void => {
                clearTimeout(timer);
                this.response.off("drain", settle);
                this.response.off("close", settle);
                resolve();
            };
            this.response.on("drain", settle);
            this.response.on("close", settle);
        });
    }
}

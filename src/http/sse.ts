import { once } from "node:events";
import type { FastifyReply } from "fastify";
import type { MapleError } from "../errors.js";

/**
 * A Server-Sent Events response in OpenAI's form: `data: {json}` events, an in-band error event
 * when something fails after the stream began, and `data: [DONE]` last.
 */
export class SseStream {
    private finished = false;

    constructor(private readonly reply: FastifyReply) {
        reply.hijack();
        reply.raw.writeHead(200, {
            "content-type": "text/event-stream; charset=utf-8",
            "cache-control": "no-cache",
            // No Connection header of our own: Node sends keep-alive, or close when the client asked
            // for it (an explicit keep-alive here kept such sockets open until keepAliveTimeout).
            // Proxies such as nginx would otherwise buffer the stream.
            "x-accel-buffering": "no"
        });
    }

    /** Writes one event; waits while the client's socket is full, so a slow reader slows generation instead of growing memory. */
    async send(data: unknown): Promise<void> {
        await this.write(`data: ${JSON.stringify(data)}\n\n`);
    }

    /** Writes one named event (`event: NAME`), as the Responses API streams them. */
    async sendEvent(name: string, data: unknown): Promise<void> {
        await this.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    }

    async sendError(error: MapleError): Promise<void> {
        await this.send(error.toJSON());
    }

    async done(): Promise<void> {
        await this.write("data: [DONE]\n\n");
        this.end();
    }

    /** Ends the response, e.g. after the client went away. */
    end(): void {
        if (this.finished) return;
        this.finished = true;
        this.reply.raw.end();
    }

    private async write(text: string): Promise<void> {
        const raw = this.reply.raw;
        if (this.finished || raw.destroyed || raw.writableEnded) return;
        if (!raw.write(text)) await Promise.race([once(raw, "drain"), once(raw, "close")]);
    }
}

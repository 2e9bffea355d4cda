import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, it } from "node:test";
import { SseStream } from "../../src/http/sse.js";

/**
 * A response whose reader is slow: it takes one small write at a time and acknowledges it on a
 * later turn of the event loop, so every event the stream writes fills it and waits for `drain`.
 */
class SlowResponse extends Writable {
    readonly chunks: string[] = [];
    status: number | undefined;
    drains = 0;

    constructor() {
        super({ highWaterMark: 8, decodeStrings: false });
        this.on("drain", () => {
            this.drains += 1;
        });
    }

    writeHead(status: number): this {
        this.status = status;
        return this;
    }

    override _write(chunk: string, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
        this.chunks.push(chunk);
        setImmediate(done);
    }
}

describe("SseStream", () => {
    it("waits through thousands of backpressure waits without piling up drain or close listeners", async () => {
        const response = new SlowResponse();
        const warnings: Error[] = [];
        const onWarning = (warning: Error): void => {
            warnings.push(warning);
        };
        process.on("warning", onWarning);
        try {
            const stream = new SseStream(response);
            const baseline = { drain: response.listenerCount("drain"), close: response.listenerCount("close") };
            const events = 3000;
            for (let index = 0; index < events; index += 1) {
                await stream.send({ data: { index } });
                assert.equal(response.listenerCount("drain"), baseline.drain, `drain listeners after event ${index}`);
                assert.equal(response.listenerCount("close"), baseline.close, `close listeners after event ${index}`);
            }
            await stream.finish("[DONE]");
            // Every write overflowed the 8-byte buffer, so each one waited for its drain.
            assert.ok(response.drains >= events, `only ${response.drains} drains for ${events} events`);
            assert.equal(response.chunks.length, events + 1);
            assert.equal(response.chunks[0], "data: {\"index\":0}\n\n");
            assert.equal(response.chunks.at(-1), "data: [DONE]\n\n");
            await new Promise((resolve) => setImmediate(resolve));
            assert.deepEqual(warnings.filter((warning) => warning.name === "MaxListenersExceededWarning"), []);
        } finally {
            process.off("warning", onWarning);
        }
    });

    it("writes named events as an event: line before the data: line", async () => {
        const response = new SlowResponse();
        const stream = new SseStream(response);
        await stream.send({ event: "message_start", data: { type: "message_start" } });
        await stream.send({ data: { plain: true } });
        await stream.finish();
        assert.equal(response.status, 200);
        assert.deepEqual(response.chunks, [
            "event: message_start\ndata: {\"type\":\"message_start\"}\n\n",
            "data: {\"plain\":true}\n\n"
        ]);
    });

    it("stops waiting when the response closes during a wait, and writes nothing after", async () => {
        const response = new SlowResponse();
        // A reader that never reads: the first write fills the buffer and is never acknowledged.
        response._write = () => undefined;
        const stream = new SseStream(response);
        const baseline = { drain: response.listenerCount("drain"), close: response.listenerCount("close") };
        const sending = stream.send({ data: "x".repeat(64) });
        setImmediate(() => response.destroy());
        await sending;
        assert.equal(response.listenerCount("drain"), baseline.drain);
        assert.equal(response.listenerCount("close"), baseline.close);
        await stream.send({ data: "after" });
        await stream.finish("[DONE]");
        assert.equal(response.chunks.length, 0);
    });

    it("closes the response when a write waits past its deadline, once, and stops waiting", async () => {
        // A reader that never acknowledges: every write after the first waits for a drain that never comes.
        const response = new (class extends SlowResponse {
            override _write(chunk: string): void {
                this.chunks.push(chunk);
            }
        })();
        let expired = 0;
        const baseline = response.listenerCount("drain");
        const stream = new SseStream(response, { ms: 50, onExpired: () => (expired += 1) });
        // Past the response's 8-byte buffer: this write waits.
        await stream.send({ data: "x".repeat(64) });
        assert.equal(expired, 1);
        assert.ok(response.destroyed, "the connection is closed");
        await stream.send({ data: "after" });
        await stream.finish("[DONE]");
        assert.equal(expired, 1);
        assert.equal(response.listenerCount("drain"), baseline);
    });
});

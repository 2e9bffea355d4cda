import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { readHealth, waitFor, waitForHealth } from "../helpers/waitFor.js";

/** The write deadline these tests run with (the default is 60 s). */
const writeTimeoutSeconds = 1;

/**
 * A streaming request from a client that reads nothing back: the raw socket is paused from the
 * start, as a closed laptop lid, a buffering proxy or a stuck consumer would leave it. The kernel's
 * buffers fill, then the server's write waits.
 */
function stalledStream(server: TestServer, body: unknown): Socket {
    const url = new URL(server.url);
    const socket = connect({ host: url.hostname, port: Number(url.port) });
    socket.pause();
    const json = JSON.stringify(body);
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(json)}\r\n\r\n${json}`);
    socket.on("error", () => undefined);
    return socket;
}

/**
 * Holds its slot for as long as the client lets it: ignore_eos up to the context's end. Every
 * token's 20 alternatives (~1.5 KB an event) fill the ~4 MB that loopback's socket buffers take
 * within ~2,600 tokens; a plain stream's ~250 bytes a token would need ~16,000.
 */
const longStream = (seed: number): Record<string, unknown> => ({
    messages: [{ role: "user", content: "Write for as long as you can." }],
    stream: true, ignore_eos: true, max_tokens: 16_000, seed, temperature: 0.8, logprobs: true, top_logprobs: 20
});

async function metricValue(server: TestServer, name: string): Promise<number> {
    const text = await (await server.request("/metrics")).text();
    const line = text.split("\n").find((candidate) => candidate.startsWith(`${name}{`));
    return line === undefined ? Number.NaN : Number(line.split(" ").at(-1));
}

describe("a client that stops reading its stream (--write-timeout)", () => {
    let server: TestServer;

    before(async () => {
        // Large slots, so a generation outlasts what the sockets' buffers can hold.
        server = await startTestServer({ parallel: 2, contextSize: 16_384, writeTimeoutSeconds });
    });
    after(async () => server.close());

    it("cuts both stalled streams within the deadline, frees their slots, counts them, and serves the next request", async () => {
        const sockets: Socket[] = [];
        try {
            sockets.push(stalledStream(server, longStream(1)), stalledStream(server, longStream(2)));
            await waitForHealth(server, (health) => health.active === 2, "both stalled streams to hold a slot");
            // The generations run until the sockets' buffers fill (~2,000 tokens), then the deadline
            // cuts them: well within this bound when the deadline works, never without it.
            await waitFor(async () => {
                const cut = await metricValue(server, "maple:stream_write_timeouts_total");
                return cut === 2 && (await readHealth(server)).active === 0 ? true : undefined;
            }, "both stalled streams to be cut and their slots freed", 120_000);
            // The clients see their connections closed once they read what was sent.
            let closed = 0;
            for (const socket of sockets) {
                socket.once("close", () => (closed += 1));
                socket.resume();
            }
            await waitFor(() => (closed === 2 ? true : undefined), "both stalled clients' connections to close", 10_000);

            const next = await server.post("/v1/chat/completions", {
                messages: [{ role: "user", content: "Hi" }], max_tokens: 8, ignore_eos: true, temperature: 0
            }, {});
            assert.equal(next.status, 200);
            const body = await next.json() as { usage: { completion_tokens: number } };
            assert.equal(body.usage.completion_tokens, 8);
        } finally {
            for (const socket of sockets) socket.destroy();
        }
    });

    it("never cuts a stream whose client reads it", async () => {
        const response = await server.post("/v1/chat/completions", { ...longStream(3), max_tokens: 64 });
        assert.equal(response.status, 200);
        const reader = response.body!.getReader();
        let text = "";
        for (;;) {
            const chunk = await reader.read();
            if (chunk.done) break;
            text += new TextDecoder().decode(chunk.value);
        }
        assert.ok(text.includes("data: [DONE]"));
        assert.equal((await readHealth(server)).active, 0);
        assert.equal(await metricValue(server, "maple:stream_write_timeouts_total"), 2);
    });
});

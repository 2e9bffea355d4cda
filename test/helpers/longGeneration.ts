import assert from "node:assert/strict";
import type { TestServer } from "./testServer.js";

/**
 * A grammar that keeps maple-tiny generating for several seconds (about 500 tokens of "a": ~6 s
 * on one thread of our 2-core machines): long enough to hold a slot while a test looks at the
 * queue, short enough that a test that forgets to cancel it still ends. llama.cpp refuses more
 * than 2000 repetitions.
 */
export const longGrammar = "root ::= \"a\"{1500}";
export const longGeneration = { prompt: "Hold the slot:", max_tokens: 1000, grammar: longGrammar };
/**
 * The same hold on the path users get: no grammar (which switches off the direct steps and the
 * native decode run), a plain seeded sampler, the end-of-generation token ignored.
 */
export const longPlainGeneration = { prompt: "Hold the slot:", max_tokens: 1000, ignore_eos: true, temperature: 0.7, seed: 11 };

export interface HeldStream {
    /** Disconnects the client, as a user closing the tab would. */
    abort(): void;
    /** The SSE text received up to now. */
    received(): string;
}

/**
 * Starts a long streaming completion and resolves once its first event arrived: from then on it
 * holds a slot until `abort()` (or several seconds later).
 */
export async function startHeldStream(server: TestServer, generation: object = longGeneration): Promise<HeldStream> {
    const controller = new AbortController();
    const response = await server.request("/v1/completions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ...generation, stream: true }),
        signal: controller.signal
    });
    assert.equal(response.status, 200);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("data: ")) {
        const chunk = await reader.read();
        assert.ok(!chunk.done, "the long stream ended before its first event");
        text += chunk.value;
    }
    // Keep reading in the background, so the server is never held up by a full socket.
    void (async () => {
        for (;;) {
            const chunk = await reader.read();
            if (chunk.done) return;
            text += chunk.value;
        }
    })().catch(() => undefined);
    return {
        abort: () => controller.abort(),
        received: () => text
    };
}

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { startTestServer } from "../helpers/testServer.js";
import { parseSse, readSse } from "../helpers/sse.js";

/**
 * Still generating when any grace period below ends, on any machine: 8,000 tokens on the path
 * users get (plain sampling, no grammar), where a grace period is 200 ms.
 */
const longGeneration = { prompt: "Go:", max_tokens: 8000, stream: true, ignore_eos: true, temperature: 0.7, seed: 3 };
const longContext = 8192;

describe("graceful shutdown", () => {
    it("lets an in-flight stream finish within the grace period", async () => {
        const server = await startTestServer({ parallel: 1 });
        const response = await server.post("/v1/completions", { prompt: "Go:", max_tokens: 24, stream: true, grammar: "root ::= \"b\"{500}" });
        assert.equal(response.status, 200);
        const closed = server.close({ graceMs: 60_000 });
        const events = await readSse(response);
        await closed;
        assert.equal(events.at(-1), "[DONE]");
        const finish = events.at(-2) as { choices: { finish_reason: string }[] };
        assert.equal(finish.choices[0]!.finish_reason, "length");
        assert.ok(!events.some((event) => typeof event === "object" && event !== null && "error" in event));
    });

    it("lets an in-flight stream on the plain-sampling path finish within the grace period", async () => {
        const server = await startTestServer({ parallel: 1 });
        const response = await server.post("/v1/completions", { prompt: "Go:", max_tokens: 24, stream: true, ignore_eos: true, temperature: 0.7, seed: 5,
            stream_options: { include_usage: true } });
        assert.equal(response.status, 200);
        const closed = server.close({ graceMs: 60_000 });
        const events = await readSse(response);
        await closed;
        assert.equal(events.at(-1), "[DONE]");
        const usage = events.at(-2) as { usage: { completion_tokens: number } };
        assert.equal(usage.usage.completion_tokens, 24);
        const finish = events.at(-3) as { choices: { finish_reason: string }[] };
        assert.equal(finish.choices[0]!.finish_reason, "length");
        assert.ok(!events.some((event) => typeof event === "object" && event !== null && "error" in event));
    });

    it("cancels what still runs when the grace period ends, with an error event then [DONE]", async () => {
        const server = await startTestServer({ parallel: 1, contextSize: longContext });
        const response = await server.post("/v1/completions", longGeneration);
        assert.equal(response.status, 200);
        const reader = response.body!.getReader();
        await reader.read();
        const closed = server.close({ graceMs: 200 });
        let text = "";
        for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            text += Buffer.from(value).toString();
        }
        await closed;
        const events = parseSse(text).map((event) => event.data);
        assert.equal(events.at(-1), "[DONE]");
        const error = JSON.parse(events.at(-2)!) as { error: { code: string; type: string } };
        assert.equal(error.error.code, "server_shutting_down");
        assert.equal(error.error.type, "server_error");
    });
});

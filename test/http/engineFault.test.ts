import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";
import { readHealth } from "../helpers/waitFor.js";
import { readSse } from "../helpers/sse.js";

/**
 * A real engine fault, no mock: the grammar allows only the token "a" (id 64) and logit_bias bans
 * it, so llama.cpp's sampler has nothing left to sample and fails inside the decode batch.
 */
const impossible = { grammar: "root ::= \"a\"", logit_bias: { 64: -100 }, max_tokens: 4 };

describe("an engine error during generation", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ parallel: 2 });
    });
    after(async () => server.close());

    it("answers 500 server_error without internals, and the next request is served", async () => {
        const response = await server.post("/v1/completions", { prompt: "x", ...impossible });
        assert.equal(response.status, 500);
        const body = await response.json() as WireError;
        assert.equal(body.error.type, "server_error");
        assert.ok(!/\/work\/| {4}at /.test(body.error.message));
        const next = await server.post("/v1/completions", { prompt: "x", max_tokens: 4, grammar: "root ::= \"ok\"" });
        assert.equal(((await next.json()) as { choices: { text: string }[] }).choices[0]!.text, "ok");
    });

    it("in a stream: an in-band error event, then [DONE]; the slot is freed", async () => {
        const events = await readSse(await server.post("/v1/chat/completions", {
            messages: [{ role: "user", content: "hi" }], stream: true, ...impossible
        }));
        assert.equal(events.at(-1), "[DONE]");
        const error = events.at(-2) as WireError;
        assert.equal(error.error.type, "server_error");
        const health = await readHealth(server);
        assert.equal(health.active, 0);
    });

    // A fault leaves the failed batch in the slot's KV cache, uncounted by node-llama-cpp: the
    // slot must be cleaned, or the next batch on it is refused (issue 15's slot choice reuses it).
    it("does not fail the other requests generating in the same batch", async () => {
        const healthy = server.post("/v1/completions", { prompt: "y", max_tokens: 64, grammar: "root ::= \"b\"{40}" });
        const failing = server.post("/v1/completions", { prompt: "x", ...impossible });
        assert.equal((await failing).status, 500);
        const body = await (await healthy).json() as { choices: { text: string }[] };
        assert.equal(body.choices[0]!.text, "b".repeat(40));
    });
});

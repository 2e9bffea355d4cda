import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { startTestServer } from "../helpers/testServer.js";
import { parseSse, readSse } from "../helpers/sse.js";

const longGeneration = { prompt: "Go:", max_tokens: 400, stream: true, grammar: "root ::= \"a\"{500}" };

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

    it("cancels what still runs when the grace period ends, with an error event then [DONE]", async () => {
        const server = await startTestServer({ parallel: 1 });
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

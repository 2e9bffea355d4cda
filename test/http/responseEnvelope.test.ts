import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { exact } from "../helpers/grammar.js";
import { readSse } from "../helpers/sse.js";

/** The fields around `choices` that strictly typed clients read: `usage` on chunks, `system_fingerprint`. */

type Envelope = Record<string, unknown> & { choices: unknown[] };

const chatBody = { messages: [{ role: "user", content: "hi" }], max_tokens: 16, chat_template_kwargs: { enable_thinking: false }, grammar: exact("a short answer") };
const completionBody = { prompt: "x", max_tokens: 16, grammar: exact("a short answer") };

describe("response envelope: usage on chunks, system_fingerprint", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer();
    });
    after(async () => server.close());

    async function chunks(path: string, body: Record<string, unknown>): Promise<Envelope[]> {
        const events = await readSse(await server.post(path, { ...body, stream: true }));
        assert.equal(events.at(-1), "[DONE]");
        return events.slice(0, -1) as Envelope[];
    }

    async function response(path: string, body: Record<string, unknown>): Promise<Envelope> {
        const answer = await server.post(path, body);
        assert.equal(answer.status, 200);
        return answer.json() as Promise<Envelope>;
    }

    it("with include_usage, every chunk but the usage chunk has \"usage\": null (OpenAI's shape); without it, no usage key", async () => {
        for (const [path, body] of [["/v1/chat/completions", chatBody], ["/v1/completions", completionBody]] as const) {
            const withUsage = await chunks(path, { ...body, stream_options: { include_usage: true } });
            const last = withUsage.at(-1)!;
            assert.deepEqual(last.choices, []);
            assert.equal(typeof last["usage"], "object");
            assert.ok(last["usage"] !== null);
            assert.ok(withUsage.length >= 2);
            for (const chunk of withUsage.slice(0, -1)) {
                assert.ok("usage" in chunk, `${path}: ${JSON.stringify(chunk)}`);
                assert.equal(chunk["usage"], null);
            }
            for (const chunk of await chunks(path, body)) assert.ok(!("usage" in chunk), `${path}: ${JSON.stringify(chunk)}`);
        }
    });

    it("carries one system_fingerprint on every response and chunk of a server, and another for another model", async () => {
        const seen = new Set<unknown>();
        for (const path of ["/v1/chat/completions", "/v1/completions"]) {
            const body = path === "/v1/completions" ? completionBody : chatBody;
            seen.add((await response(path, body))["system_fingerprint"]);
            for (const chunk of await chunks(path, { ...body, stream_options: { include_usage: true } })) seen.add(chunk["system_fingerprint"]);
        }
        assert.equal(seen.size, 1, [...seen].join());
        const [fingerprint] = seen;
        assert.match(String(fingerprint), /^fp_[0-9a-f]{10}$/);
        // The same version and engine on another model file: another fingerprint.
        const other = await startTestServer({ model: "synthetic:qwen3-tiny" });
        try {
            const answer = await other.post("/v1/completions", completionBody);
            const otherFingerprint = (await answer.json() as Envelope)["system_fingerprint"];
            assert.match(String(otherFingerprint), /^fp_[0-9a-f]{10}$/);
            assert.notEqual(otherFingerprint, fingerprint);
        } finally {
            await other.close();
        }
    });
});

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { exact } from "../helpers/grammar.js";

const apiKey = "sk-maple-unprefixed";
/** `grammar` is Maple's (llama.cpp's) extension field; the SDK sends extra fields as they are. */
const withGrammar = <T extends object>(params: T, text: string): T => ({ ...params, grammar: exact(text) });

describe("OpenAI routes without /v1 (as llama-server serves them)", () => {
    let server: TestServer;
    /** A client configured the way many llama-server configs are: the base URL without /v1. */
    let client: OpenAI;
    before(async () => {
        server = await startTestServer({ apiKey });
        client = new OpenAI({ baseURL: server.url, apiKey, maxRetries: 0 });
    });
    after(async () => server.close());

    it("serves chat completions, completions and models through the openai SDK at a base URL without /v1", async () => {
        const chat = await client.chat.completions.create(withGrammar({
            model: "maple-preview", messages: [{ role: "user" as const, content: "hi" }], max_tokens: 16,
            chat_template_kwargs: { enable_thinking: false }
        }, "unprefixed chat"));
        assert.equal(chat.choices[0]!.message.content, "unprefixed chat");

        const stream = await client.chat.completions.create(withGrammar({
            model: "maple-preview", messages: [{ role: "user" as const, content: "hi" }], max_tokens: 16, stream: true as const,
            chat_template_kwargs: { enable_thinking: false }
        }, "streamed"));
        let streamed = "";
        for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? "";
        assert.equal(streamed, "streamed");

        const completion = await client.completions.create(withGrammar({ model: "maple-preview", prompt: "x", max_tokens: 8 }, "plain"));
        assert.equal(completion.choices[0]!.text, "plain");

        const models = await client.models.list();
        assert.deepEqual(models.data.map((model) => model.id), ["maple-preview"]);
        assert.equal((await client.models.retrieve("maple-preview")).id, "maple-preview");
    });

    it("answers the aliases exactly as the /v1 routes: same body, same auth, same 404s", async () => {
        const headers = { authorization: `Bearer ${apiKey}` };
        const [prefixed, unprefixed] = await Promise.all(["/v1/models", "/models"].map(async (path) => (await server.request(path, { headers })).json()));
        assert.deepEqual(unprefixed, prefixed);
        assert.equal((await server.request("/models")).status, 401);
        assert.equal((await server.post("/chat/completions", { messages: [{ role: "user", content: "x" }] })).status, 401);
        assert.equal((await server.request("/models/another-model", { headers })).status, 404);
        // Maple's own routes are not given a /v1 twin, and an unknown path stays unknown.
        assert.equal((await server.request("/v1/health", { headers })).status, 404);
        assert.equal((await server.request("/audio/speech", { method: "POST", headers })).status, 404);
    });
});

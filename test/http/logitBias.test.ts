import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Engine } from "../../src/engine/types.js";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";

/** `logit_bias` on the real engine: 100 all but forces a token, −100 bans it, unknown ids are a 400. */

interface Completion { choices: { text: string; logprobs: { tokens: string[]; top_logprobs: Record<string, number>[] } | null }[]; usage: { completion_tokens: number } }
interface ChatCompletion { choices: { message: { content: string | null } }[] }

describe("logit_bias", () => {
    let server: TestServer;
    let engine: Engine;

    before(async () => {
        server = await startTestServer({ parallel: 1 });
        engine = server.host.state.status === "ready" ? server.host.state.engine : assert.fail("not ready");
    });
    after(async () => server.close());

    async function complete(body: Record<string, unknown>): Promise<Completion> {
        const response = await server.post("/v1/completions", { prompt: "The weather today is", ...body });
        assert.equal(response.status, 200, await response.clone().text());
        return response.json() as Promise<Completion>;
    }

    it("100 on one token at temperature 1 makes every token that one (both routes)", async () => {
        const [token] = engine.tokenize(" sunny");
        assert.equal(engine.tokenize(" sunny").length, 1);
        const completion = await complete({ max_tokens: 8, temperature: 1, seed: 3, logit_bias: { [String(token)]: 100 } });
        assert.equal(completion.choices[0]!.text, " sunny".repeat(8));
        const chat = await server.post("/v1/chat/completions", {
            messages: [{ role: "user", content: "Weather?" }], max_tokens: 4, temperature: 1, seed: 3,
            chat_template_kwargs: { enable_thinking: false }, logit_bias: { [String(token)]: 100 }
        });
        assert.equal((await chat.json() as ChatCompletion).choices[0]!.message.content, " sunny".repeat(4));
    });

    it("-100 bans a token: greedy then picks the next most likely one", async () => {
        const greedy = await complete({ max_tokens: 1, temperature: 0, logprobs: 2 });
        const [first, second] = Object.keys(greedy.choices[0]!.logprobs!.top_logprobs[0]!);
        assert.equal(greedy.choices[0]!.text, first);
        const ids = engine.tokenize(first!);
        assert.equal(ids.length, 1, `"${first}" is one token`);
        const banned = await complete({ max_tokens: 1, temperature: 0, logit_bias: { [String(ids[0])]: -100 } });
        assert.equal(banned.choices[0]!.text, second);
        // Over a longer sampled run the banned token never appears.
        const sampled = await complete({ max_tokens: 24, temperature: 1.5, top_k: 0, seed: 8, logprobs: 0, logit_bias: { [String(ids[0])]: -100 } });
        assert.ok(!sampled.choices[0]!.logprobs!.tokens.includes(first!));
    });

    it("refuses ids outside the vocabulary and biases outside -100..100 (400 naming logit_bias)", async () => {
        for (const logitBias of [{ 999999: 5 }, { 12: 101 }, { abc: 1 }]) {
            const response = await server.post("/v1/completions", { prompt: "x", logit_bias: logitBias });
            assert.equal(response.status, 400, JSON.stringify(logitBias));
            assert.match((await response.json() as WireError).error.param ?? "", /^logit_bias/);
        }
    });
});

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestServer, type TestServer } from "../helpers/testServer.js";

interface CompletionWire {
    choices: { text: string }[];
    usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
}

/** Token-id prompts make the shared prefix exact: ids 1000.. are plain word pieces in Qwen3's vocabulary. */
const ids = (start: number, count: number): number[] => Array.from({ length: count }, (_, index) => 1000 + start + index);

describe("prefix cache across slots", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ parallel: 2 });
    });
    after(async () => server.close());

    const complete = async (prompt: number[] | string, extra: Record<string, unknown> = {}): Promise<CompletionWire> => {
        const response = await server.post("/v1/completions", { prompt, max_tokens: 2, temperature: 0, ...extra });
        assert.equal(response.status, 200);
        return response.json() as Promise<CompletionWire>;
    };

    it("reports exactly the reused prompt tokens, and always evaluates the last prompt token", async () => {
        const a = ids(0, 40);
        const b = ids(500, 30);
        assert.equal((await complete(a)).usage.prompt_tokens_details.cached_tokens, 0);
        // B shares nothing with A: it takes the unused slot rather than evicting A's cache.
        assert.equal((await complete(b)).usage.prompt_tokens_details.cached_tokens, 0);
        assert.equal((await complete(a)).usage.prompt_tokens_details.cached_tokens, 39);
        assert.equal((await complete(b)).usage.prompt_tokens_details.cached_tokens, 29);
        // A prompt that continues A after 25 shared tokens reuses exactly those 25.
        const branch = [...a.slice(0, 25), ...ids(900, 10)];
        assert.equal((await complete(branch)).usage.prompt_tokens_details.cached_tokens, 25);
        // A longer conversation that extends the branch reuses all of it.
        const extended = [...branch, ...ids(950, 5)];
        assert.equal((await complete(extended)).usage.prompt_tokens_details.cached_tokens, branch.length);
    });

    it("a shared system prompt hits the cache in chat", async () => {
        const system = { role: "system", content: "You are Maple, a careful assistant. Answer in one short sentence, and think before you answer." };
        const chat = async (question: string): Promise<{ usage: CompletionWire["usage"] }> => {
            const response = await server.post("/v1/chat/completions", { messages: [system, { role: "user", content: question }], max_tokens: 2 });
            return response.json() as Promise<{ usage: CompletionWire["usage"] }>;
        };
        await chat("What is the capital of France?");
        const second = await chat("How many legs does a spider have?");
        assert.ok(second.usage.prompt_tokens_details.cached_tokens >= 20, `cached ${second.usage.prompt_tokens_details.cached_tokens}`);
        assert.ok(second.usage.prompt_tokens_details.cached_tokens < second.usage.prompt_tokens);
    });

    it("the same seed gives the same text whether the prompt was cached or not", async () => {
        const prompt = ids(2000, 20);
        const cold = await complete(prompt, { max_tokens: 8, temperature: 0 });
        const warm = await complete(prompt, { max_tokens: 8, temperature: 0 });
        assert.equal(warm.usage.prompt_tokens_details.cached_tokens, 19);
        assert.equal(warm.choices[0]!.text, cold.choices[0]!.text);
    });
});

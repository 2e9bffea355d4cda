import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";
import { readHealth } from "../helpers/waitFor.js";
import { readSse } from "../helpers/sse.js";

/**
 * `n` > 1 on both routes: n choices from one prompt evaluation, each sampled on its own; streamed
 * chunks interleave and carry their choice's index; usage counts the prompt once.
 */

const noThinking = { chat_template_kwargs: { enable_thinking: false } };
const messages = [{ role: "user", content: "Name a colour." }];

interface Usage { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details: { cached_tokens: number } }
interface ChatCompletion {
    choices: { index: number; message: { role: string; content: string | null }; finish_reason: string }[];
    usage: Usage;
}
interface ChatChunk {
    choices: { index: number; delta: { role?: string; content?: string }; finish_reason: string | null }[];
    usage?: Usage;
}
interface Completion { choices: { index: number; text: string; finish_reason: string | null }[]; usage?: Usage }

describe("n > 1 choices", () => {
    let server: TestServer;

    before(async () => {
        server = await startTestServer({ parallel: 3 });
    });
    after(async () => server.close());

    async function post<T>(path: string, body: Record<string, unknown>): Promise<T> {
        const response = await server.post(path, body);
        assert.equal(response.status, 200, await response.clone().text());
        return response.json() as Promise<T>;
    }

    it("chat: three choices, indexes 0..2, prompt counted once, completion tokens summed", async () => {
        const single = await post<ChatCompletion>("/v1/chat/completions", { messages, max_tokens: 8, temperature: 1, seed: 1, ...noThinking });
        const completion = await post<ChatCompletion>("/v1/chat/completions", { messages, max_tokens: 8, temperature: 1, seed: 5, n: 3, ...noThinking });
        assert.deepEqual(completion.choices.map((choice) => choice.index), [0, 1, 2]);
        for (const choice of completion.choices) {
            assert.equal(choice.message.role, "assistant");
            assert.equal(choice.finish_reason, "length");
        }
        // Sampled independently (seeds 5, 6, 7): the choices differ.
        assert.equal(new Set(completion.choices.map((choice) => choice.message.content)).size, 3);
        assert.equal(completion.usage.prompt_tokens, single.usage.prompt_tokens);
        assert.equal(completion.usage.completion_tokens, 3 * 8);
        assert.equal(completion.usage.total_tokens, completion.usage.prompt_tokens + 24);
        assert.ok(completion.usage.prompt_tokens_details.cached_tokens < completion.usage.prompt_tokens);
        assert.equal((await readHealth(server)).active, 0, "every slot is free again");
    });

    it("chat, greedy: every choice is the greedy answer, whichever slot it ran in", async () => {
        const one = await post<ChatCompletion>("/v1/chat/completions", { messages, max_tokens: 10, temperature: 0, ...noThinking });
        const three = await post<ChatCompletion>("/v1/chat/completions", { messages, max_tokens: 10, temperature: 0, n: 3, ...noThinking });
        for (const choice of three.choices) assert.equal(choice.message.content, one.choices[0]!.message.content);
    });

    it("chat streaming: chunks interleave, each with its index; one role chunk and one finish chunk per choice", async () => {
        const response = await server.post("/v1/chat/completions", {
            messages, max_tokens: 6, temperature: 1, seed: 9, n: 3, stream: true, stream_options: { include_usage: true }, ...noThinking
        });
        assert.equal(response.status, 200);
        const events = await readSse(response);
        assert.equal(events.at(-1), "[DONE]");
        const chunks = events.slice(0, -1) as ChatChunk[];
        const usage = chunks.at(-1)!;
        assert.deepEqual(usage.choices, []);
        assert.equal(usage.usage!.completion_tokens, 18);
        const perChoice = new Map<number, ChatChunk["choices"][number][]>();
        for (const chunk of chunks.slice(0, -1)) {
            assert.equal(chunk.choices.length, 1);
            const choice = chunk.choices[0]!;
            perChoice.set(choice.index, [...(perChoice.get(choice.index) ?? []), choice]);
        }
        assert.deepEqual([...perChoice.keys()].sort(), [0, 1, 2]);
        for (const [index, deltas] of perChoice) {
            assert.deepEqual(deltas[0]!.delta, { role: "assistant", content: "" }, `choice ${index}`);
            assert.equal(deltas.at(-1)!.finish_reason, "length");
            assert.ok(deltas.slice(0, -1).every((delta) => delta.finish_reason === null));
        }
        // Interleaved: some choice's chunk comes between two chunks of another.
        const order = chunks.slice(3, -1).map((chunk) => chunk.choices[0]!.index);
        assert.ok(order.some((index, position) => position > 0 && index !== order[position - 1]), order.join(","));
    });

    it("completions: n choices, streamed with their index", async () => {
        const completion = await post<Completion>("/v1/completions", { prompt: "Red, green,", max_tokens: 5, temperature: 1, seed: 2, n: 2 });
        assert.deepEqual(completion.choices.map((choice) => choice.index), [0, 1]);
        assert.equal(completion.usage!.completion_tokens, 10);
        const response = await server.post("/v1/completions", { prompt: "Red, green,", max_tokens: 5, temperature: 1, seed: 2, n: 2, stream: true });
        const chunks = (await readSse(response)).filter((event): event is Completion => event !== "[DONE]");
        const texts = ["", ""];
        for (const chunk of chunks) for (const choice of chunk.choices) texts[choice.index] += choice.text;
        assert.equal(chunks.filter((chunk) => chunk.choices[0]?.finish_reason === "length").length, 2);
        assert.ok(texts.every((text) => text.length > 0));
    });

    it("n larger than the slots is a 400 naming n", async () => {
        for (const [path, body] of [["/v1/chat/completions", { messages, n: 4 }], ["/v1/completions", { prompt: "x", n: 4 }]] as const) {
            const response = await server.post(path, body);
            assert.equal(response.status, 400);
            assert.equal((await response.json() as WireError).error.param, "n");
        }
    });
});

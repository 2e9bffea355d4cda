import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { startTestServer, type TestServer } from "../helpers/testServer.js";

/**
 * The conversation key (prompt_cache_key, user or X-Session-Id) on a real server: two slots, no
 * prompt cache beyond them, so what a slot holds is all that can be reused. Conversation B leaves
 * its turn in one slot, A in the other; then A sends a prompt that shares nothing with either
 * (its client rewrote the history), of the same length: both slots would lose as much, a tie. The
 * key breaks it in favour of A's own slot, so B's next turn finds its slot intact. Without a key
 * the least recently used slot is taken, which is B's: B's next turn starts over.
 */

type Route = "chat" | "responses";
type KeyPlace = "prompt_cache_key" | "user" | "x-session-id" | "none";

/** Same length in tokens for every word (each is one token in Qwen3's vocabulary, checked below). */
const topic = (word: string): string => `Tell me about the ${word}.${` ${word}`.repeat(60)}`;

interface Turn {
    promptTokens: number;
    cachedTokens: number;
}

async function send(server: TestServer, route: Route, turns: { role: string; content: string }[], key: string | undefined, place: KeyPlace): Promise<Turn> {
    const keyFields = key === undefined || place === "none" || place === "x-session-id" ? {} : { [place]: key };
    const headers: Record<string, string> = key !== undefined && place === "x-session-id" ? { "x-session-id": key } : {};
    if (route === "chat") {
        const response = await server.post("/v1/chat/completions", { messages: turns, max_tokens: 1, temperature: 0, ...keyFields }, headers);
        assert.equal(response.status, 200, await response.clone().text());
        const { usage } = await response.json() as { usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } } };
        return { promptTokens: usage.prompt_tokens, cachedTokens: usage.prompt_tokens_details.cached_tokens };
    }
    const response = await server.post("/v1/responses", { input: turns, max_output_tokens: 1, temperature: 0, store: false, ...keyFields }, headers);
    assert.equal(response.status, 200, await response.clone().text());
    const { usage } = await response.json() as { usage: { input_tokens: number; input_tokens_details: { cached_tokens: number } } };
    return { promptTokens: usage.input_tokens, cachedTokens: usage.input_tokens_details.cached_tokens };
}

/** Runs the contention above on a fresh server; returns what B's next turn found cached, of its first turn's prompt. */
async function returningConversation(route: Route, place: KeyPlace): Promise<{ cached: number; firstPrompt: number }> {
    const server = await startTestServer({ model: "synthetic:qwen3-tiny", parallel: 2, cacheRamMiB: 0 });
    try {
        const b = [{ role: "user", content: topic("apple") }];
        const first = await send(server, route, b, undefined, "none");
        const a = await send(server, route, [{ role: "user", content: topic("lemon") }], "conversation-a", place);
        const rewritten = await send(server, route, [{ role: "user", content: topic("grape") }], "conversation-a", place);
        // The tie needs equal losses: equal prompts (and one generated token each).
        assert.deepEqual([a.promptTokens, rewritten.promptTokens], [first.promptTokens, first.promptTokens]);
        const next = await send(server, route, [...b, { role: "assistant", content: "Apples are fruit." }, { role: "user", content: "And pears?" }], undefined, "none");
        return { cached: next.cachedTokens, firstPrompt: first.promptTokens };
    } finally {
        await server.close();
    }
}

const cases: [Route, KeyPlace][] = [["chat", "prompt_cache_key"], ["responses", "prompt_cache_key"], ["responses", "user"], ["responses", "x-session-id"]];

describe("conversation key: a keyed conversation keeps its slot under contention", () => {
    for (const [route, place] of cases) {
        it(`${route}, key in ${place}: the other conversation's slot is spared`, async () => {
            const { cached, firstPrompt } = await returningConversation(route, place);
            // All of B's first prompt up to where its answer began is still in its slot.
            assert.ok(cached >= firstPrompt - 8, `cached ${cached} of ${firstPrompt}`);
        });
    }

    for (const route of ["chat", "responses"] as const) {
        it(`${route} without a key: the least recently used slot is taken, and the other conversation starts over`, async () => {
            const { cached, firstPrompt } = await returningConversation(route, "none");
            // Only the template's first tokens, which every conversation shares.
            assert.ok(cached < firstPrompt / 4, `cached ${cached} of ${firstPrompt}`);
        });
    }
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { MapleConfig } from "../../src/config/settings.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";

/**
 * maple-tiny with the windowed sliding-window cache (the default; window 128, and 768 cells a
 * slot in its sliding layers): a conversation whose answer ran far past those cells still comes
 * back to the slot cut exactly where its next turn leaves it, from the checkpoint kept once its
 * prompt was evaluated, and answers as a slot that never held the long answer does.
 */

interface CompletionWire {
    choices: { logprobs: { tokens: string[] } | null }[];
    usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
}

const conversation = (seed: number, length: number): number[] => Array.from({ length }, (_, index) => 1000 + ((seed * 7919 + index * 104_729) % 30_000));
const complete = async (server: TestServer, prompt: number[], maxTokens: number): Promise<CompletionWire> => {
    const response = await server.post("/v1/completions", { prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true, logprobs: 0 });
    assert.equal(response.status, 200, await response.clone().text());
    return response.json() as Promise<CompletionWire>;
};
const serverOf = (overrides: Partial<MapleConfig> = {}): Promise<TestServer> =>
    startTestServer({ model: "synthetic:maple-tiny", parallel: 1, contextSize: 2048, cacheRamMiB: 0, ...overrides });

describe("windowed sliding-window cache (maple-tiny)", () => {
    const prompt = conversation(1, 300);
    const next = [...prompt, ...conversation(2, 30)];
    it("a next turn after a long answer is cut back to its checkpoint exactly", async () => {
        const reference = await serverOf();
        let expected: string[];
        try {
            // The slot holds the prompt, then other tokens: cut back to the prompt by its own cells.
            await complete(reference, [...prompt, ...conversation(3, 4)], 1);
            const answer = await complete(reference, next, 12);
            assert.equal(answer.usage.prompt_tokens_details.cached_tokens, prompt.length);
            expected = answer.choices[0]!.logprobs!.tokens;
        } finally {
            await reference.close();
        }
        const server = await serverOf();
        try {
            // 900 generated tokens: the sliding layers' cells before the prompt's end are long overwritten.
            await complete(server, prompt, 900);
            const answer = await complete(server, next, 12);
            // A completion's next turn is taken to leave it four tokens before its end (no template
            // to tell); the checkpoint kept at its end serves the whole prompt.
            assert.equal(answer.usage.prompt_tokens_details.cached_tokens, prompt.length, "restored from the checkpoint, not evaluated again");
            assert.deepEqual(answer.choices[0]!.logprobs!.tokens, expected);
        } finally {
            await server.close();
        }
    });

    it("MAPLE_SWA_FULL keeps the full cache: more KV bytes a slot", async () => {
        const windowed = await serverOf();
        const full = await serverOf({ swaFull: true });
        try {
            const bytes = async (server: TestServer): Promise<number> => ((await (await server.request("/health")).json()) as { kv_bytes_per_slot: number }).kv_bytes_per_slot;
            const [windowedBytes, fullBytes] = [await bytes(windowed), await bytes(full)];
            // 1 global layer of 4 holds all 2,048 cells; the 3 sliding ones 768 each.
            assert.equal(windowedBytes / fullBytes, (2048 + 3 * 768) / (4 * 2048));
        } finally {
            await windowed.close();
            await full.close();
        }
    });
});

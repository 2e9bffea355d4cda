import assert from "node:assert/strict";
import type { TestServer } from "./testServer.js";

/**
 * The prompt cache's returning conversation (test/http/promptCache.test.ts, and on a GPU in
 * test/gpu/vulkan.test.ts): token-id prompts, an evicted slot's state saved and restored, and the
 * reference run whose slot was never evicted.
 */

export interface CompletionWire {
    choices: { text: string; logprobs: { tokens: string[] } | null }[];
    usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
}

/** A token-id conversation: ids 1000.. are plain word pieces in Qwen3's vocabulary (both tiny models use it). */
export const conversation = (seed: number, length: number): number[] => Array.from({ length }, (_, index) => 1000 + ((seed * 7919 + index * 104_729) % 30_000));

/** Longer than maple-tiny's 128-token sliding window, so a restored state must hold what the window slid past. */
export const turnLength = 300;

export const complete = async (server: TestServer, prompt: number[], extra: Record<string, unknown> = {}): Promise<CompletionWire> => {
    const response = await server.post("/v1/completions", { prompt, max_tokens: 12, temperature: 0, ignore_eos: true, logprobs: 0, ...extra });
    assert.equal(response.status, 200, await response.clone().text());
    return response.json() as Promise<CompletionWire>;
};

export const tokensOf = (completion: CompletionWire): string[] => completion.choices[0]!.logprobs!.tokens;
export const cached = (completion: Pick<CompletionWire, "usage">): number => completion.usage.prompt_tokens_details.cached_tokens;

/**
 * On maple-tiny an evicted slot is saved as it was four tokens before the end of its prompt (a
 * sliding-window state cannot be cut back further than one token; see CacheTier), and that is
 * what a returning conversation gets back.
 */
export const restoredLength = (model: string, length = turnLength): number => (model === "maple-tiny" ? length - 4 : length);

/**
 * What a slot that was never evicted holds for the reference run: the tokens a restore gives back,
 * evaluated in the same batches as the evicted run evaluated them. With maple-tiny's windowed
 * cache a prompt is evaluated in two pieces, up to the checkpoint where its next turn leaves it
 * (four tokens before its end), then the rest: so the reference prompt goes on past the
 * restored length with four other tokens, and both runs cut back to it.
 */
export const referencePrompt = (tokens: readonly number[], model: string): number[] =>
    (model === "maple-tiny" ? [...tokens.slice(0, restoredLength(model, tokens.length)), ...conversation(999, 4)] : tokens.slice(0, restoredLength(model, tokens.length)));

/**
 * Conversation A, then (when `evicted`) B, which takes A's only slot, then A's next turn, which
 * extends all A's slot held (one token generated: its state is the prompt). Returns A's second
 * answer. Without eviction the slot holds only what a restore gives back, so both evaluate the
 * same batch next (llama.cpp's sums differ with the batch's shape, and random weights near ties flip).
 * `length`: each turn's prompt (above maple-tiny's window).
 */
export async function returningConversation(server: TestServer, model: string, seed: number, evicted: boolean, length = turnLength): Promise<CompletionWire> {
    const a = conversation(seed, length);
    await complete(server, evicted ? a : referencePrompt(a, model), { max_tokens: 1 });
    if (evicted) await complete(server, conversation(seed + 1, length));
    return complete(server, [...a, ...conversation(seed + 2, 40)]);
}

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { GenerationPart } from "../../src/core/index.js";
import { OllamaChunkFolder, OllamaChunkWriter, type ChunkIdentity } from "../../src/ollama/responseChunks.js";

const clock = { durations: () => ({ total_duration: 40, load_duration: 10, prompt_eval_duration: 10, eval_duration: 20 }) };
const usage = { promptTokens: 12, cachedTokens: 4, completionTokens: 7, reasoningTokens: 2 };
const token = (text: string) => ({ type: "logprobs" as const, token: { token: 1, text, bytes: [...Buffer.from(text)], logprob: -0.5, top: [] } });
const parts: GenerationPart[] = [
    { type: "reasoning-delta", text: "Let me " }, { type: "reasoning-delta", text: "think." },
    token("Hi"), { type: "text-delta", text: "Hi" }, { type: "text-delta", text: " there" },
    { type: "tool-call", index: 0, name: "get_weather", arguments: "{\"city\":\"Oslo\"}" },
    token("!"),
    { type: "finish", reason: "stop", matchedStop: 7, toolCalls: 1, usage }
];

function replay(identity: ChunkIdentity) {
    const writer = new OllamaChunkWriter(identity, clock);
    return parts.flatMap((part) => writer.part(part));
}

describe("Ollama's objects from the core's parts", () => {
    it("chat: one object per piece, done and the counts on the last only, logprobs on the next object", () => {
        const chunks = replay({ model: "m", api: "chat" });
        assert.equal(chunks.length, 6);
        assert.deepEqual(chunks.map((chunk) => chunk.done), [false, false, false, false, false, true]);
        assert.equal(chunks[2]!.message?.content, "Hi");
        assert.equal(chunks[2]!.logprobs?.[0]?.token, "Hi");
        assert.deepEqual(chunks[4]!.message?.tool_calls?.[0]?.function, { index: 0, name: "get_weather", arguments: { city: "Oslo" } });
        const last = chunks.at(-1)!;
        assert.equal(last.logprobs?.[0]?.token, "!", "logprobs still held ride on the last object");
        assert.equal(last.done_reason, "stop");
        assert.equal(last.prompt_eval_count, 12);
        assert.equal(last.eval_count, 7);
        assert.equal(last.total_duration, 40);
    });

    it("the stream: false answer is the stream folded", () => {
        const folder = new OllamaChunkFolder();
        folder.add(replay({ model: "m", api: "chat" }));
        const whole = folder.build();
        assert.equal(whole.message?.thinking, "Let me think.");
        assert.equal(whole.message?.content, "Hi there");
        assert.equal(whole.message?.tool_calls?.length, 1);
        assert.deepEqual(whole.logprobs?.map((logprob) => logprob.token), ["Hi", "!"]);
        assert.equal(whole.done, true);
        assert.equal(whole.eval_duration, 20);
    });

    it("generate: `response` and `thinking` instead of `message`", () => {
        const folder = new OllamaChunkFolder();
        folder.add(replay({ model: "m", api: "generate" }).filter((chunk) => chunk.message?.tool_calls === undefined));
        const whole = folder.build();
        assert.equal(whole.response, "Hi there");
        assert.equal(whole.thinking, "Let me think.");
        assert.equal(whole.message, undefined);
    });

    it("a length finish is done_reason length", () => {
        const writer = new OllamaChunkWriter({ model: "m", api: "chat" }, clock);
        assert.equal(writer.part({ type: "finish", reason: "length", matchedStop: null, toolCalls: 0, usage })[0]!.done_reason, "length");
    });
});

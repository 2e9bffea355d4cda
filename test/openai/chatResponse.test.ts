import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { FinishPart, GenerationPart, TokenLogprobs, Usage } from "../../src/core/index.js";
import { hermesParser } from "../helpers/hermesParser.js";
import { ChatCompletionBuilder, ChatCompletionStream, type ChatChunk, type ChatCompletionIdentity, type SentChatCompletion } from "../../src/openai/chatResponse.js";
import { CompletionBuilder, CompletionStream } from "../../src/openai/completionResponse.js";

const identity: ChatCompletionIdentity = { id: "chatcmpl-1", created: 1700000000, model: "maple", weightVersion: "v1", includeReasoning: true, systemFingerprint: "fp_test", includeUsage: false };
const usage: Usage = { promptTokens: 10, cachedTokens: 4, completionTokens: 7, reasoningTokens: 3 };

function finish(overrides: Partial<FinishPart> = {}): FinishPart {
    return { type: "finish", reason: "stop", matchedStop: 151645, toolCalls: 0, usage, ...overrides };
}

function logprobs(token: number, text: string): GenerationPart {
    const entry: TokenLogprobs = { token, text, bytes: [...Buffer.from(text)], logprob: -0.5, top: [{ token, text, bytes: [...Buffer.from(text)], logprob: -0.5 }] };
    return { type: "logprobs", token: entry };
}

/** A choice's streamed chunks, as the `choices[0]` of each. */
function streamChoice(parts: GenerationPart[], id = identity): Record<string, unknown>[] {
    const stream = new ChatCompletionStream(id, 1, false);
    return [...stream.start(), ...parts.flatMap((part) => stream.part(0, part))]
        .map((event) => event.data.choices[0]! as unknown as Record<string, unknown>);
}

/** The whole `chat.completion`: the fold of the stream's chunks for these parts of each choice (taken in turn). */
function whole(choices: GenerationPart[][], id = identity, withLogprobs = choices.flat().some((part) => part.type === "logprobs")): SentChatCompletion {
    const stream = new ChatCompletionStream(id, choices.length, true);
    const builder = new ChatCompletionBuilder({ withLogprobs, includeReasoning: id.includeReasoning });
    builder.add(stream.start());
    const longest = Math.max(...choices.map((parts) => parts.length));
    for (let at = 0; at < longest; at++) choices.forEach((parts, choice) => { if (at < parts.length) builder.add(stream.part(choice, parts[at]!)); });
    builder.add(stream.end(usage));
    return builder.build();
}

function collect(parts: GenerationPart[], id = identity): Record<string, unknown> {
    return whole([parts], id).choices[0]! as unknown as Record<string, unknown>;
}

const answer: GenerationPart[] = [
    { type: "reasoning-delta", text: "Let me think." },
    { type: "text-delta", text: "Hello" },
    { type: "text-delta", text: ", world" },
    finish()
];

describe("OpenAI chat: parts → chunks and the chat.completion", () => {
    it("streams the role first, reasoning_content, content, then the finish chunk", () => {
        const stream = new ChatCompletionStream(identity, 1, false);
        const first: ChatChunk = stream.start()[0]!.data;
        assert.deepEqual(first, {
            id: "chatcmpl-1", object: "chat.completion.chunk", created: 1700000000, model: "maple", system_fingerprint: "fp_test",
            choices: [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }]
        });
        const choices = streamChoice(answer);
        assert.deepEqual(choices.map((choice) => choice["delta"]), [
            { role: "assistant", content: "" }, { reasoning_content: "Let me think." }, { content: "Hello" }, { content: ", world" }, {}
        ]);
        assert.deepEqual(choices.at(-1), { index: 0, delta: {}, logprobs: null, finish_reason: "stop", matched_stop: 151645 });
        const last = stream.part(0, finish())[0]!.data;
        assert.deepEqual(last.metadata, { weight_version: "v1" });
        assert.equal(stream.lastData, "[DONE]");
    });

    it("folds the same chunks into the message, with usage including reasoning tokens", () => {
        const choice = collect(answer);
        assert.deepEqual(choice, {
            index: 0, message: { role: "assistant", content: "Hello, world", reasoning_content: "Let me think." },
            logprobs: null, finish_reason: "stop", matched_stop: 151645
        });
        assert.deepEqual(whole([answer]), {
            id: "chatcmpl-1", object: "chat.completion", created: 1700000000, model: "maple", system_fingerprint: "fp_test", choices: [choice],
            usage: {
                prompt_tokens: 10, completion_tokens: 7, total_tokens: 17, prompt_tokens_details: { cached_tokens: 4 },
                completion_tokens_details: { reasoning_tokens: 3 }, reasoning_tokens: 3
            },
            metadata: { weight_version: "v1" }
        });
    });

    it("sends each tool call whole with an index and a call_ id; a turn of calls only has null content and finishes with tool_calls", () => {
        const parts: GenerationPart[] = [
            { type: "tool-call", index: 0, name: "weather", arguments: "{\"city\":\"Oslo\"}" },
            { type: "tool-call", index: 1, name: "time", arguments: "{}" },
            finish({ toolCalls: 2 })
        ];
        const chunks = streamChoice(parts).slice(1);
        const calls = chunks.slice(0, 2).map((choice) => ((choice["delta"] as Record<string, unknown>)["tool_calls"] as Record<string, unknown>[])[0]!);
        assert.deepEqual(calls.map((call) => [call["index"], call["type"], call["function"]]), [
            [0, "function", { name: "weather", arguments: "{\"city\":\"Oslo\"}" }],
            [1, "function", { name: "time", arguments: "{}" }]
        ]);
        for (const call of calls) assert.match(call["id"] as string, /^call_[0-9a-f]{24}$/);
        assert.equal(chunks[2]!["finish_reason"], "tool_calls");

        const message = collect(parts)["message"] as Record<string, unknown>;
        assert.equal(message["content"], null);
        assert.equal(message["reasoning_content"], null);
        assert.equal((message["tool_calls"] as unknown[]).length, 2);
        assert.equal(collect(parts)["finish_reason"], "tool_calls");
        // Cut by the token limit while calling: still `length`.
        assert.equal(collect([parts[0]!, finish({ reason: "length", matchedStop: null, toolCalls: 1 })])["finish_reason"], "length");
    });

    it("puts the logprobs of tokens whose text is held on the next chunk, and the rest on the finish chunk", () => {
        const parts: GenerationPart[] = [
            logprobs(1, "<th"), logprobs(2, "ink>"), logprobs(3, "Hi"), { type: "text-delta", text: "Hi" },
            logprobs(4, "!"), finish()
        ];
        const chunks = streamChoice(parts).slice(1);
        assert.equal(chunks.length, 2);
        const carried = (chunk: Record<string, unknown>): string[] =>
            ((chunk["logprobs"] as { content: { token: string }[] } | null)?.content ?? []).map((entry) => entry.token);
        assert.deepEqual(carried(chunks[0]!), ["<th", "ink>", "Hi"]);
        assert.deepEqual(carried(chunks[1]!), ["!"]);
        assert.deepEqual((chunks[0]!["logprobs"] as { refusal: unknown }).refusal, null);

        const collected = collect(parts)["logprobs"] as { content: { token: string; logprob: number; bytes: number[]; top_logprobs: unknown[] }[] };
        assert.deepEqual(collected.content.map((entry) => entry.token), ["<th", "ink>", "Hi", "!"]);
        assert.deepEqual(collected.content[2], { token: "Hi", logprob: -0.5, bytes: [72, 105], top_logprobs: [{ token: "Hi", logprob: -0.5, bytes: [72, 105] }] });
    });

    it("leaves reasoning_content out when include_reasoning is false", () => {
        const hidden = { ...identity, includeReasoning: false };
        const message = collect([{ type: "text-delta", text: "ok" }, finish()], hidden)["message"] as Record<string, unknown>;
        assert.deepEqual(message, { role: "assistant", content: "ok" });
    });

    it("interleaves n choices by index and ends with one usage chunk when asked", () => {
        const stream = new ChatCompletionStream(identity, 2, true);
        assert.deepEqual(stream.start().map((event) => event.data.choices[0]!.index), [0, 1]);
        assert.equal(stream.part(1, { type: "text-delta", text: "b" })[0]!.data.choices[0]!.index, 1);
        const [usageChunk] = stream.end(usage);
        assert.deepEqual(usageChunk!.data.choices, []);
        assert.deepEqual(usageChunk!.data.usage?.completion_tokens_details, { reasoning_tokens: 3 });
        assert.deepEqual(new ChatCompletionStream(identity, 1, false).end(usage), []);
    });

    it("the whole response is the fold of the stream, for the parser's parts at every split of a recorded output", () => {
        const recorded = "Need weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lagos\"}}\n</tool_call>\n"
            + "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
        const partsOf = (pieces: string[]): GenerationPart[] => {
            const parser = hermesParser({ startsInReasoning: true, parseToolCalls: true });
            let calls = 0;
            return [...pieces.flatMap((piece) => parser.push(piece)), ...parser.flush()]
                .filter((part) => part.type === "tool_call" || part.text !== "")
                .map((part): GenerationPart => (part.type === "tool_call" ? { type: "tool-call", index: calls++, name: part.name, arguments: part.arguments }
                    : { type: part.type === "reasoning" ? "reasoning-delta" : "text-delta", text: part.text }))
                .concat(finish({ toolCalls: 2 }));
        };
        const withoutIds = (response: SentChatCompletion): string => JSON.stringify(response).replace(/call_[0-9a-f]{24}/g, "call_…");
        const expected = withoutIds(whole([partsOf([recorded])]));
        for (let cut = 1; cut < recorded.length; cut++) {
            const parts = partsOf([recorded.slice(0, cut), recorded.slice(cut)]);
            assert.equal(withoutIds(whole([parts])), expected, `cut at ${cut}`);
            // The rule "content is null when the whole answer was tool calls", on the stream's side:
            // no content beyond the role chunk's "" (what the SDKs accumulate to null).
            const contents = streamChoice(parts).map((choice) => (choice["delta"] as { content?: string }).content).filter((content) => content !== undefined);
            assert.deepEqual(contents, [""], `cut at ${cut}`);
        }
        const message = (JSON.parse(expected) as SentChatCompletion).choices[0]!.message;
        assert.deepEqual(message, {
            role: "assistant", content: null, reasoning_content: "Need weather.",
            tool_calls: [
                { id: "call_…", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Lagos\"}" } },
                { id: "call_…", type: "function", function: { name: "get_time", arguments: "{}" } }
            ]
        });
    });

    it("folds n interleaved choices by index, each with its own message, logprobs and finish", () => {
        const response = whole([
            [logprobs(1, "a"), { type: "text-delta", text: "a" }, finish({ matchedStop: "END" })],
            [{ type: "text-delta", text: "b" }, { type: "text-delta", text: "c" }, finish({ reason: "length", matchedStop: null })]
        ], identity, true);
        assert.deepEqual(response.choices.map((choice) => [choice.index, choice.message.content, choice.finish_reason, choice.matched_stop]),
            [[0, "a", "stop", "END"], [1, "bc", "length", null]]);
        assert.deepEqual(response.choices.map((choice) => choice.logprobs?.content?.map((entry) => entry.token)), [["a"], []]);
        assert.equal(response.usage.total_tokens, 17);
    });
});

describe("OpenAI completions: parts → text_completion chunks and response", () => {
    const completion = { id: "cmpl-1", created: 1700000000, model: "maple", systemFingerprint: "fp_test" };
    const parts: GenerationPart[] = [logprobs(1, "é"), logprobs(2, "ab"), { type: "text-delta", text: "éab" }, logprobs(3, "!"), finish({ usage: { ...usage, reasoningTokens: 0 } })];

    it("streams text chunks carrying their tokens' logprobs, then the finish chunk and usage without reasoning fields", () => {
        const stream = new CompletionStream(completion, 1, true);
        assert.deepEqual(stream.start(), []);
        // As the client reads them: through JSON (top_logprobs objects have no prototype).
        const chunks = parts.flatMap((part) => stream.part(0, part)).map((event) => JSON.parse(JSON.stringify(event.data)) as Record<string, unknown>);
        assert.equal(chunks.length, 2);
        assert.deepEqual(chunks[0], {
            id: "cmpl-1", object: "text_completion", created: 1700000000, model: "maple", system_fingerprint: "fp_test", usage: null,
            choices: [{ index: 0, text: "éab", logprobs: { tokens: ["é", "ab"], token_logprobs: [-0.5, -0.5], top_logprobs: [{ é: -0.5 }, { ab: -0.5 }], text_offset: [0, 1] }, finish_reason: null }]
        });
        assert.deepEqual((chunks[1]!["choices"] as unknown[])[0], {
            index: 0, text: "", logprobs: { tokens: ["!"], token_logprobs: [-0.5], top_logprobs: [{ "!": -0.5 }], text_offset: [3] }, finish_reason: "stop", matched_stop: 151645
        });
        const usageChunk = stream.end(usage)[0]!.data as Record<string, unknown>;
        assert.deepEqual(usageChunk["usage"], { prompt_tokens: 10, completion_tokens: 7, total_tokens: 17, prompt_tokens_details: { cached_tokens: 4 } });
    });

    it("folds the same chunks into one choice with all its logprobs, offsets continuing", () => {
        const stream = new CompletionStream(completion, 1, true);
        const builder = new CompletionBuilder();
        builder.add(stream.start());
        for (const part of parts) builder.add(stream.part(0, part));
        builder.add(stream.end(usage));
        const response = JSON.parse(JSON.stringify(builder.build())) as unknown;
        assert.deepEqual(response, {
            id: "cmpl-1", object: "text_completion", created: 1700000000, model: "maple", system_fingerprint: "fp_test",
            choices: [{
                index: 0, text: "éab", finish_reason: "stop", matched_stop: 151645,
                logprobs: { tokens: ["é", "ab", "!"], token_logprobs: [-0.5, -0.5, -0.5], top_logprobs: [{ é: -0.5 }, { ab: -0.5 }, { "!": -0.5 }], text_offset: [0, 1, 3] }
            }],
            usage: { prompt_tokens: 10, completion_tokens: 7, total_tokens: 17, prompt_tokens_details: { cached_tokens: 4 } }
        });
        // Key order too: the JSON a client receives is the old collector's, byte for byte.
        assert.equal(JSON.stringify(Object.keys((response as { choices: object[] }).choices[0]!)), JSON.stringify(["index", "text", "logprobs", "finish_reason", "matched_stop"]));
    });
});

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import type {
    ChatCompletionAssistantMessageParam, ChatCompletionChunk, ChatCompletionMessage, ChatCompletionMessageFunctionToolCall, ChatCompletionTool
} from "openai/resources/chat/completions";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { exact } from "../helpers/grammar.js";

/**
 * The official `openai` package against a real Maple server: what the SDK surfaces, read the way
 * an application reads it. The random-weight model writes exact text through Maple's `grammar`
 * field, which constrains the raw output (the template has already opened `<think>`).
 */

/** `grammar` is a Maple extension; the SDK sends unknown body fields as they are. */
const withGrammar = <T extends object>(params: T, text: string): T => ({ ...params, grammar: exact(text) });

/** The SDK types do not know `reasoning_content`; it is on the message object all the same. */
type WithReasoning = { reasoning_content?: string | null };
const reasoningOf = (message: ChatCompletionMessage | ChatCompletionChunk.Choice.Delta): string | null | undefined =>
    (message as WithReasoning).reasoning_content;

const answerText = "Let me add.\n</think>\n\nThe answer is 4.";
const toolCallText = (calls: { name: string; arguments: Record<string, unknown> }[]): string =>
    "ok\n</think>\n\n" + calls.map((call) => `<tool_call>\n${JSON.stringify(call)}\n</tool_call>`).join("\n");

const weatherTool: ChatCompletionTool = {
    type: "function",
    function: {
        name: "get_weather",
        description: "Current weather for a city",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false }
    }
};
const timeTool: ChatCompletionTool = {
    type: "function",
    function: { name: "get_time", parameters: { type: "object", properties: {} } }
};

const question = [{ role: "user" as const, content: "What is 2+2?" }];
const model = "maple-preview";

describe("openai SDK client", () => {
    let server: TestServer;
    let client: OpenAI;
    before(async () => {
        server = await startTestServer({ maxNewTokensLimit: 256, maxPromptTokens: 800 });
        client = server.client;
    });
    after(async () => server.close());

    it("chat.completions.create: content, reasoning_content on the message, usage with reasoning_tokens", async () => {
        const completion = await client.chat.completions.create(withGrammar({ model, messages: question, max_tokens: 64 }, answerText));
        assert.equal(typeof completion, "object", "a string here means the response was not served as application/json");
        assert.equal(completion.object, "chat.completion");
        assert.match(completion.id, /^chatcmpl-/);
        assert.equal(completion.model, model);
        assert.equal(completion.choices.length, 1);
        const [choice] = completion.choices;
        assert.equal(choice!.finish_reason, "stop");
        assert.equal(choice!.message.role, "assistant");
        assert.equal(choice!.message.content, "The answer is 4.");
        assert.equal(reasoningOf(choice!.message), "Let me add.");
        assert.equal(choice!.message.tool_calls, undefined);

        const usage = completion.usage!;
        assert.ok(usage.prompt_tokens > 0);
        assert.ok(usage.completion_tokens > 0);
        assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
        assert.equal(typeof usage.prompt_tokens_details?.cached_tokens, "number");
        const reasoningTokens = usage.completion_tokens_details?.reasoning_tokens;
        assert.equal(typeof reasoningTokens, "number");
        assert.ok(reasoningTokens! > 0 && reasoningTokens! < usage.completion_tokens,
            `reasoning_tokens ${reasoningTokens} should be a part of completion_tokens ${usage.completion_tokens}`);
    });

    it("stream with include_usage: reasoning deltas then content deltas, then a usage chunk with choices: []", async () => {
        const stream = await client.chat.completions.create(withGrammar({
            model, messages: question, max_tokens: 64, stream: true as const, stream_options: { include_usage: true }
        }, answerText));
        let content = "";
        let reasoning = "";
        let sawContentBeforeReasoning = false;
        const finishReasons: string[] = [];
        const roles: string[] = [];
        let usage: OpenAI.CompletionUsage | undefined;
        let usageChunkChoices: unknown;
        const ids = new Set<string>();
        for await (const chunk of stream) {
            assert.equal(chunk.object, "chat.completion.chunk");
            assert.equal(chunk.model, model);
            assert.equal(typeof chunk.created, "number");
            ids.add(chunk.id);
            if (chunk.usage) {
                usage = chunk.usage;
                usageChunkChoices = chunk.choices;
                continue;
            }
            assert.equal(usage, undefined, "the usage chunk must be the last one");
            const choice = chunk.choices[0]!;
            if (choice.delta.role) roles.push(choice.delta.role);
            const reasoningDelta = reasoningOf(choice.delta);
            if (reasoningDelta) {
                if (content !== "") sawContentBeforeReasoning = true;
                reasoning += reasoningDelta;
            }
            if (choice.delta.content) content += choice.delta.content;
            if (choice.finish_reason) finishReasons.push(choice.finish_reason);
        }
        assert.equal(ids.size, 1, "every chunk carries the same completion id");
        assert.deepEqual(roles, ["assistant"]);
        assert.equal(reasoning, "Let me add.");
        assert.equal(content, "The answer is 4.");
        assert.equal(sawContentBeforeReasoning, false);
        assert.deepEqual(finishReasons, ["stop"]);
        assert.deepEqual(usageChunkChoices, []);
        assert.ok(usage!.completion_tokens > 0);
        assert.equal(usage!.total_tokens, usage!.prompt_tokens + usage!.completion_tokens);
        assert.ok(usage!.completion_tokens_details!.reasoning_tokens! > 0);
    });

    it("chat.completions.stream helper: content events and finalChatCompletion()", async () => {
        const stream = client.chat.completions.stream(withGrammar({
            model, messages: question, max_tokens: 64, stream_options: { include_usage: true }
        }, answerText));
        let contentFromEvents = "";
        let reasoningFromChunks = "";
        stream.on("content.delta", ({ delta }) => { contentFromEvents += delta; });
        stream.on("chunk", (chunk) => { reasoningFromChunks += reasoningOf(chunk.choices[0]?.delta ?? {}) ?? ""; });
        const final = await stream.finalChatCompletion();
        assert.equal(contentFromEvents, "The answer is 4.");
        assert.equal(reasoningFromChunks, "Let me add.");
        assert.equal(final.choices[0]!.message.role, "assistant");
        assert.equal(final.choices[0]!.message.content, "The answer is 4.");
        assert.equal(final.choices[0]!.finish_reason, "stop");
        assert.ok(final.usage!.total_tokens > 0);
        // Quirk of the SDK, not of Maple: the helper Object.assign()s unknown delta fields, so the
        // accumulated message keeps only the last reasoning_content delta, not their concatenation.
        const last = reasoningOf(final.choices[0]!.message);
        assert.ok(typeof last === "string" && last !== "" && "Let me add.".endsWith(last), `got ${JSON.stringify(last)}`);
    });

    it("tools: a tool call with JSON arguments, content null, finish_reason tool_calls", async () => {
        const completion = await client.chat.completions.create(withGrammar({
            model, messages: [{ role: "user" as const, content: "Weather in Lagos?" }], tools: [weatherTool], max_tokens: 128
        }, toolCallText([{ name: "get_weather", arguments: { city: "Lagos" } }])));
        const [choice] = completion.choices;
        assert.equal(choice!.finish_reason, "tool_calls");
        assert.equal(choice!.message.role, "assistant");
        assert.equal(choice!.message.content, null);
        assert.equal(reasoningOf(choice!.message), "ok");
        const calls = choice!.message.tool_calls!;
        assert.equal(calls.length, 1);
        const call = calls[0] as ChatCompletionMessageFunctionToolCall;
        assert.equal(call.type, "function");
        assert.match(call.id, /^call_/);
        assert.equal(call.function.name, "get_weather");
        assert.equal(typeof call.function.arguments, "string");
        assert.deepEqual(JSON.parse(call.function.arguments), { city: "Lagos" });
    });

    it("streamed tool calls (two in parallel) are accumulated by the stream helper", async () => {
        const stream = client.chat.completions.stream(withGrammar({
            model, messages: [{ role: "user" as const, content: "Weather and time in Lagos?" }], tools: [weatherTool, timeTool], max_tokens: 200
        }, toolCallText([{ name: "get_weather", arguments: { city: "Lagos" } }, { name: "get_time", arguments: {} }])));
        const done: { name: string; index: number; arguments: string }[] = [];
        stream.on("tool_calls.function.arguments.done", ({ name, index, arguments: args }) => { done.push({ name, index, arguments: args }); });
        const final = await stream.finalChatCompletion();
        const choice = final.choices[0]!;
        assert.equal(choice.finish_reason, "tool_calls");
        assert.equal(choice.message.content, null);
        const calls = choice.message.tool_calls as ChatCompletionMessageFunctionToolCall[];
        assert.deepEqual(calls.map((call) => call.function.name), ["get_weather", "get_time"]);
        assert.deepEqual(JSON.parse(calls[0]!.function.arguments), { city: "Lagos" });
        assert.deepEqual(JSON.parse(calls[1]!.function.arguments), {});
        assert.ok(calls.every((call) => call.type === "function" && call.id.startsWith("call_")));
        assert.notEqual(calls[0]!.id, calls[1]!.id);
        assert.deepEqual(done.map((event) => [event.index, event.name]), [[0, "get_weather"], [1, "get_time"]]);
        assert.deepEqual(JSON.parse(done[0]!.arguments), { city: "Lagos" });
    });

    it("accepts a multi-turn tool round trip: assistant with content null, reasoning_content and tool_calls, then the tool result", async () => {
        const first = await client.chat.completions.create(withGrammar({
            model, messages: [{ role: "user" as const, content: "Weather in Lagos?" }], tools: [weatherTool], max_tokens: 128
        }, toolCallText([{ name: "get_weather", arguments: { city: "Lagos" } }])));
        const call = first.choices[0]!.message.tool_calls![0] as ChatCompletionMessageFunctionToolCall;
        // The assistant turn as a reasoning-aware client sends it back (reasoning_content is not in the SDK's types).
        const assistantTurn = {
            role: "assistant",
            content: null,
            reasoning_content: reasoningOf(first.choices[0]!.message),
            tool_calls: [{ id: call.id, type: "function", function: { name: call.function.name, arguments: call.function.arguments } }]
        } as ChatCompletionAssistantMessageParam;
        const second = await client.chat.completions.create(withGrammar({
            model,
            messages: [
                { role: "user" as const, content: "Weather in Lagos?" },
                assistantTurn,
                { role: "tool" as const, tool_call_id: call.id, content: JSON.stringify({ temperature_c: 31, sky: "sunny" }) }
            ],
            tools: [weatherTool],
            max_tokens: 64
        }, "It is sunny.\n</think>\n\nLagos: 31 °C and sunny."));
        assert.equal(second.choices[0]!.finish_reason, "stop");
        assert.equal(second.choices[0]!.message.content, "Lagos: 31 °C and sunny.");
        assert.equal(reasoningOf(second.choices[0]!.message), "It is sunny.");
        assert.equal(second.choices[0]!.message.tool_calls, undefined);
        assert.ok(second.usage!.prompt_tokens > first.usage!.prompt_tokens, "the earlier turns are in the prompt");
    });

    it("an unsupported field surfaces as BadRequestError with status 400, param and type", async () => {
        const error = await client.chat.completions.create({ model, messages: question, n: 99 }).then(
            () => assert.fail("n: 99 (more than the slots) should be rejected"), (caught: unknown) => caught);
        assert.ok(error instanceof OpenAI.BadRequestError, `got ${String(error)}`);
        assert.equal(error.status, 400);
        assert.equal(error.param, "n");
        assert.equal(error.type, "invalid_request_error");
        assert.match(error.message, /at most \d+ choices/);

        const streamed = await client.chat.completions.create({ model, messages: question, n: 99, stream: true }).then(
            () => assert.fail("a streamed n: 99 should be rejected before the stream starts"), (caught: unknown) => caught);
        assert.ok(streamed instanceof OpenAI.BadRequestError);
        assert.equal(streamed.param, "n");
    });
});

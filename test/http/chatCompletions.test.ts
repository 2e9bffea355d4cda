import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";
import { exact } from "../helpers/grammar.js";
import { readSse } from "../helpers/sse.js";

interface ChatMessageWire {
    role: string;
    content: string | null;
    reasoning_content?: string | null;
    tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
}
interface ChatCompletionWire {
    id: string;
    object: string;
    model: string;
    choices: { index: number; message: ChatMessageWire; finish_reason: string; matched_stop: unknown }[];
    usage: {
        prompt_tokens: number; completion_tokens: number; total_tokens: number; reasoning_tokens: number;
        prompt_tokens_details: { cached_tokens: number }; completion_tokens_details: { reasoning_tokens: number };
    };
    metadata: { weight_version: string };
}
interface ChunkWire {
    id: string;
    object: string;
    created: number;
    model: string;
    choices: { index: number; delta: Record<string, unknown> & { tool_calls?: { index: number; id: string; type: string; function: { name: string; arguments: string } }[] }; finish_reason: string | null }[];
    usage?: ChatCompletionWire["usage"];
}

const weatherTool = {
    type: "function",
    function: { name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }
};
const timeTool = { type: "function", function: { name: "get_time", parameters: { type: "object", properties: {} } } };
const user = (content: string): { role: string; content: string }[] => [{ role: "user", content }];

async function chat(server: TestServer, body: Record<string, unknown>): Promise<ChatCompletionWire> {
    const response = await server.post("/v1/chat/completions", { max_tokens: 96, ...body });
    assert.equal(response.status, 200, await response.clone().text());
    return response.json() as Promise<ChatCompletionWire>;
}

/** Streams a request and folds the chunks back into one message, checking the chunk sequence on the way. */
async function chatStream(server: TestServer, body: Record<string, unknown>): Promise<{ message: ChatMessageWire; finishReason: string; usage: ChunkWire["usage"]; chunks: ChunkWire[] }> {
    const response = await server.post("/v1/chat/completions", { max_tokens: 96, ...body, stream: true, stream_options: { include_usage: true } });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /text\/event-stream/);
    const events = await readSse(response);
    assert.equal(events.at(-1), "[DONE]");
    const chunks = events.slice(0, -1) as ChunkWire[];
    for (const chunk of chunks) {
        assert.equal(chunk.object, "chat.completion.chunk");
        assert.equal(chunk.id, chunks[0]!.id);
        assert.equal(typeof chunk.created, "number");
        assert.equal(typeof chunk.model, "string");
    }
    assert.deepEqual(chunks[0]!.choices[0]!.delta, { role: "assistant", content: "" });
    const usageChunk = chunks.at(-1)!;
    assert.deepEqual(usageChunk.choices, []);
    const finishChunk = chunks.at(-2)!;
    assert.deepEqual(finishChunk.choices[0]!.delta, {});
    let reasoning = "";
    let content = "";
    let sawContent = false;
    const toolCalls: NonNullable<ChatMessageWire["tool_calls"]> = [];
    for (const chunk of chunks.slice(1, -2)) {
        const delta = chunk.choices[0]!.delta;
        assert.equal(chunk.choices[0]!.finish_reason, null);
        if (typeof delta.reasoning_content === "string") {
            assert.ok(!sawContent, "reasoning deltas come before content deltas");
            reasoning += delta.reasoning_content;
        }
        if (typeof delta.content === "string") {
            sawContent = true;
            content += delta.content;
        }
        for (const call of delta.tool_calls ?? []) {
            assert.equal(call.index, toolCalls.length);
            toolCalls.push({ id: call.id, type: call.type, function: call.function });
        }
    }
    return {
        message: {
            role: "assistant",
            content: toolCalls.length > 0 && content === "" ? null : content,
            ...(reasoning !== "" ? { reasoning_content: reasoning } : {}),
            ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {})
        },
        finishReason: finishChunk.choices[0]!.finish_reason!,
        usage: usageChunk.usage,
        chunks
    };
}

describe("POST /v1/chat/completions on maple-tiny (generation starts inside <think>)", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ parallel: 1 });
    });
    after(async () => server.close());

    it("splits reasoning from the answer, counts reasoning tokens, and adds the peer's fields", async () => {
        const body = await chat(server, { messages: user("What is 17*23?"), grammar: exact("17*23 = 391.\n</think>\n\n391") });
        assert.equal(body.object, "chat.completion");
        assert.match(body.id, /^chatcmpl-/);
        const choice = body.choices[0]!;
        assert.deepEqual(choice.message, { role: "assistant", content: "391", reasoning_content: "17*23 = 391." });
        assert.equal(choice.finish_reason, "stop");
        assert.equal(typeof choice.matched_stop, "number", "an end-of-generation token id");
        assert.ok(body.usage.completion_tokens_details.reasoning_tokens > 0);
        assert.ok(body.usage.completion_tokens_details.reasoning_tokens < body.usage.completion_tokens);
        assert.equal(body.usage.reasoning_tokens, body.usage.completion_tokens_details.reasoning_tokens);
        assert.equal(body.usage.total_tokens, body.usage.prompt_tokens + body.usage.completion_tokens);
        assert.deepEqual(body.metadata, { weight_version: "default" });
    });

    it("streams the spec's chunk sequence: role, reasoning deltas, content deltas, finish, usage, [DONE]", async () => {
        const streamed = await chatStream(server, { messages: user("What is 17*23?"), grammar: exact("Multiply: 17*23 = 391.\n</think>\n\nThe answer is 391.") });
        assert.deepEqual(streamed.message, { role: "assistant", content: "The answer is 391.", reasoning_content: "Multiply: 17*23 = 391." });
        assert.equal(streamed.finishReason, "stop");
        assert.ok(streamed.usage!.completion_tokens_details.reasoning_tokens > 0);
        const text = JSON.stringify(streamed.chunks);
        assert.ok(!text.includes("<think>") && !text.includes("</think>"), "no marker reaches a client");
    });

    it("gives the same result streamed and not streamed for the same seed", async () => {
        // The same cache state before both runs, so both evaluate the same prompt tokens.
        const resetCache = (): Promise<ChatCompletionWire> => chat(server, { messages: user("unrelated"), max_tokens: 1 });
        const request = { messages: user("Tell me something."), temperature: 0.9, seed: 1234, max_tokens: 40 };
        await resetCache();
        const whole = await chat(server, request);
        await resetCache();
        const streamed = await chatStream(server, request);
        const { content, reasoning_content: reasoning } = whole.choices[0]!.message;
        assert.equal(streamed.message.content, content);
        assert.equal(streamed.message.reasoning_content ?? null, reasoning ?? null);
        assert.equal(streamed.finishReason, whole.choices[0]!.finish_reason);
        assert.equal(streamed.usage!.completion_tokens, whole.usage.completion_tokens);
        assert.equal(streamed.usage!.completion_tokens_details.reasoning_tokens, whole.usage.completion_tokens_details.reasoning_tokens);
    });

    it("cut off mid-thought: everything is reasoning, content is empty, finish_reason length", async () => {
        const body = await chat(server, { messages: user("Think hard."), max_tokens: 12, grammar: "root ::= \"hmm \"{200}" });
        const choice = body.choices[0]!;
        assert.equal(choice.finish_reason, "length");
        assert.equal(choice.message.content, "");
        assert.match(choice.message.reasoning_content ?? "", /^hmm( hmm)*/);
        assert.equal(body.usage.completion_tokens, 12);
        assert.equal(body.usage.completion_tokens_details.reasoning_tokens, 12);
    });

    it("include_reasoning: false strips the reasoning but still counts its tokens", async () => {
        const body = await chat(server, { messages: user("Hi"), include_reasoning: false, grammar: exact("Private thoughts.\n</think>\n\nHello!") });
        assert.deepEqual(body.choices[0]!.message, { role: "assistant", content: "Hello!" });
        assert.ok(body.usage.completion_tokens_details.reasoning_tokens > 0);
        const streamed = await chatStream(server, { messages: user("Hi"), include_reasoning: false, grammar: exact("Private thoughts.\n</think>\n\nHello!") });
        assert.equal(streamed.message.reasoning_content, undefined);
        assert.equal(streamed.message.content, "Hello!");
    });

    it("chat_template_kwargs enable_thinking: false closes the think block in the prompt", async () => {
        const body = await chat(server, { messages: user("Hi"), chat_template_kwargs: { enable_thinking: false }, grammar: exact("Direct answer.") });
        assert.equal(body.choices[0]!.message.content, "Direct answer.");
        assert.equal(body.choices[0]!.message.reasoning_content ?? null, null);
        assert.equal(body.usage.completion_tokens_details.reasoning_tokens, 0);
    });

    it("a stop string inside the reasoning ends generation there", async () => {
        const body = await chat(server, { messages: user("Count"), stop: ["three"], grammar: exact("one two three four\n</think>\n\nfive") });
        const choice = body.choices[0]!;
        assert.equal(choice.finish_reason, "stop");
        assert.equal(choice.matched_stop, "three");
        assert.equal(choice.message.reasoning_content, "one two");
        assert.equal(choice.message.content, "");
    });

    it("turns a <tool_call> block into tool_calls with finish_reason tool_calls and content null", async () => {
        const raw = "I should look it up.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lagos\"}}\n</tool_call>";
        const body = await chat(server, { messages: user("Weather in Lagos?"), tools: [weatherTool], grammar: exact(raw), max_tokens: 128 });
        const choice = body.choices[0]!;
        assert.equal(choice.finish_reason, "tool_calls");
        assert.equal(choice.message.content, null);
        assert.equal(choice.message.reasoning_content, "I should look it up.");
        assert.equal(choice.message.tool_calls!.length, 1);
        const call = choice.message.tool_calls![0]!;
        assert.match(call.id, /^call_/);
        assert.equal(call.type, "function");
        assert.equal(call.function.name, "get_weather");
        assert.deepEqual(JSON.parse(call.function.arguments), { city: "Lagos" });

        const streamed = await chatStream(server, { messages: user("Weather in Lagos?"), tools: [weatherTool], grammar: exact(raw), max_tokens: 128 });
        assert.equal(streamed.finishReason, "tool_calls");
        assert.equal(streamed.message.content, null);
        assert.equal(streamed.message.tool_calls!.length, 1);
        assert.equal(streamed.message.tool_calls![0]!.function.name, "get_weather");
        assert.equal(streamed.message.tool_calls![0]!.type, "function");
        assert.deepEqual(JSON.parse(streamed.message.tool_calls![0]!.function.arguments), { city: "Lagos" });
    });

    it("two tool calls become two entries with indexes 0 and 1; a call without arguments gets \"{}\"", async () => {
        const raw = "Two lookups.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\"}\n</tool_call>";
        const body = await chat(server, { messages: user("Weather and time?"), tools: [weatherTool, timeTool], grammar: exact(raw), max_tokens: 160 });
        const calls = body.choices[0]!.message.tool_calls!;
        assert.deepEqual(calls.map((call) => call.function.name), ["get_weather", "get_time"]);
        assert.equal(calls[1]!.function.arguments, "{}");
        assert.notEqual(calls[0]!.id, calls[1]!.id);
        const streamed = await chatStream(server, { messages: user("Weather and time?"), tools: [weatherTool, timeTool], grammar: exact(raw), max_tokens: 160 });
        assert.deepEqual(streamed.message.tool_calls!.map((call) => call.function.name), ["get_weather", "get_time"]);
    });

    it("leaves a tool-call block whose body is not JSON in content, as text", async () => {
        const raw = "x\n</think>\n\n<tool_call>\nnot json at all\n</tool_call>";
        const body = await chat(server, { messages: user("?"), tools: [weatherTool], grammar: exact(raw) });
        const choice = body.choices[0]!;
        assert.equal(choice.finish_reason, "stop");
        assert.equal(choice.message.tool_calls, undefined);
        assert.equal(choice.message.content, "<tool_call>\nnot json at all\n</tool_call>");
    });

    it("tool_choice none hides the tools from the template and parses no calls", async () => {
        const raw = "x\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>";
        const withTools = await chat(server, { messages: user("?"), tools: [weatherTool], grammar: exact(raw) });
        const none = await chat(server, { messages: user("?"), tools: [weatherTool], tool_choice: "none", grammar: exact(raw) });
        assert.ok(none.usage.prompt_tokens < withTools.usage.prompt_tokens, "tools are not rendered");
        assert.equal(none.choices[0]!.message.tool_calls, undefined);
        assert.match(none.choices[0]!.message.content ?? "", /^<tool_call>/);
        const named = await chat(server, { messages: user("?"), tools: [weatherTool, timeTool], tool_choice: { type: "function", function: { name: "get_time" } }, max_tokens: 1 });
        const both = await chat(server, { messages: user("?"), tools: [weatherTool, timeTool], max_tokens: 1 });
        assert.ok(named.usage.prompt_tokens < both.usage.prompt_tokens, "a named tool_choice renders only that tool");
    });

    it("accepts a multi-turn tool round trip (assistant content null with reasoning_content, then a tool message) and hits the prefix cache", async () => {
        const messages = [
            { role: "system", content: "You are terse." },
            { role: "user", content: "Weather in Lagos?" },
            { role: "assistant", content: null, reasoning_content: "Need the tool.", tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Lagos\"}" } }] },
            { role: "tool", tool_call_id: "call_1", content: "31°C, sunny" }
        ];
        const first = await chat(server, { messages, tools: [weatherTool], grammar: exact("ok\n</think>\n\nIt is 31°C and sunny in Lagos.") });
        assert.equal(first.choices[0]!.message.content, "It is 31°C and sunny in Lagos.");
        const second = await chat(server, { messages: [...messages, { role: "assistant", content: "It is 31°C and sunny in Lagos." }, { role: "user", content: "Thanks" }], tools: [weatherTool], max_tokens: 2 });
        assert.ok(second.usage.prompt_tokens_details.cached_tokens > first.usage.prompt_tokens / 2, "the shared conversation prefix is reused");
    });

    it("accepts developer messages, text-part lists, penalties and max_completion_tokens", async () => {
        const body = await chat(server, {
            messages: [{ role: "developer", content: [{ type: "text", text: "Be brief." }] }, { role: "user", content: [{ type: "text", text: "Hi" }, { type: "text", text: " there" }] }],
            presence_penalty: 0.5, frequency_penalty: 0.5, repetition_penalty: 1.1, max_completion_tokens: 5, user: "someone", temperature: 0.7, top_p: 0.9, top_k: 40
        });
        assert.equal(body.usage.completion_tokens <= 5, true);
    });

    for (const [name, body, param] of [
        ["an image part", { messages: [{ role: "user", content: [{ type: "text", text: "see" }, { type: "image_url", image_url: { url: "http://x/y.png" } }] }] }, "messages[0].content[1].type"],
        ["an audio part", { messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "", format: "wav" } }] }] }, "messages[0].content[0].type"],
        ["an unknown role", { messages: [{ role: "wizard", content: "hi" }] }, "messages[0].role"],
        ["empty messages", { messages: [] }, "messages"],
        ["missing messages", {}, "messages"],
        ["n beyond the slots", { messages: user("hi"), n: 2 }, "n"],
        ["top_logprobs over 20", { messages: user("hi"), logprobs: true, top_logprobs: 21 }, "top_logprobs"],
        ["a schema keyword the grammar cannot enforce", { messages: user("hi"), response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "string", pattern: "a" } } } }, "response_format.json_schema.schema"],
        ["a named tool_choice that names no offered tool", { messages: user("hi"), tools: [weatherTool], tool_choice: { type: "function", function: { name: "nope" } } }, "tool_choice"],
        ["tool_choice required without tools", { messages: user("hi"), tool_choice: "required" }, "tool_choice"],
        ["a tool without a name", { messages: user("hi"), tools: [{ type: "function", function: { parameters: {} } }] }, "tools[0].function.name"],
        ["tool parameters that are not an object", { messages: user("hi"), tools: [{ type: "function", function: { name: "f", parameters: "nope" } }] }, "tools[0].function.parameters"],
        ["assistant tool_calls whose arguments are not JSON", { messages: [{ role: "user", content: "x" }, { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{oops" } }] }] }, "messages[1].tool_calls[0].function.arguments"],
        ["a tool message without a matching call", { messages: [{ role: "user", content: "x" }, { role: "tool", tool_call_id: "missing", content: "r" }] }, "messages[1].tool_call_id"],
        ["an invalid grammar", { messages: user("hi"), grammar: "root ::= [" }, "grammar"]
    ] as const) {
        it(`answers 400 naming the param for ${name}`, async () => {
            const response = await server.post("/v1/chat/completions", body);
            assert.equal(response.status, 400);
            const error = (await response.json() as WireError).error;
            assert.equal(error.type, "invalid_request_error");
            assert.equal(error.param, param);
        });
    }
});

describe("POST /v1/chat/completions on qwen3-tiny (the model opens <think> itself)", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ model: "synthetic:qwen3-tiny" });
    });
    after(async () => server.close());

    it("reads a <think> block the model opens itself", async () => {
        const body = await chat(server, { messages: user("Hi"), grammar: exact("<think>\nA greeting.\n</think>\n\nHello!") });
        assert.deepEqual(body.choices[0]!.message, { role: "assistant", content: "Hello!", reasoning_content: "A greeting." });
        assert.ok(body.usage.completion_tokens_details.reasoning_tokens > 0);
        const streamed = await chatStream(server, { messages: user("Hi"), grammar: exact("<think>\nA greeting.\n</think>\n\nHello!") });
        assert.deepEqual(streamed.message, { role: "assistant", content: "Hello!", reasoning_content: "A greeting." });
    });

    it("an answer without a think block is all content", async () => {
        const body = await chat(server, { messages: user("Hi"), chat_template_kwargs: { enable_thinking: false }, grammar: exact("Just an answer.") });
        assert.equal(body.choices[0]!.message.content, "Just an answer.");
        assert.equal(body.usage.completion_tokens_details.reasoning_tokens, 0);
    });
});

describe("a chat template that raises on a conversation", () => {
    let server: TestServer;
    before(async () => {
        const dir = await mkdtemp(join(tmpdir(), "maple-template-"));
        const file = join(dir, "template.jinja");
        // Raises as Gemma's does on roles that do not alternate. (Not on a system message, which
        // Gemma 2's also raises on: a template without one gets system text folded into the first
        // user turn, as llama.cpp's polyfill does, so that raise never fires.)
        await writeFile(file, "{% for m in messages %}{% if loop.index0 > 0 and m.role == messages[loop.index0 - 1].role %}"
        + "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
        + "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n");
        server = await startTestServer({ chatTemplateFile: file });
    });
    after(async () => server.close());

    it("answers 400 with the template's own message", async () => {
        const response = await server.post("/v1/chat/completions", { messages: [{ role: "user", content: "hi" }, { role: "user", content: "again" }] });
        assert.equal(response.status, 400);
        const error = (await response.json() as WireError).error;
        assert.match(error.message, /Conversation roles must alternate/);
        assert.equal(error.type, "invalid_request_error");
        const fine = await server.post("/v1/chat/completions", { messages: user("hi"), max_tokens: 3, grammar: exact("ok") });
        assert.equal(((await fine.json()) as ChatCompletionWire).choices[0]!.message.content, "ok");
    });
});

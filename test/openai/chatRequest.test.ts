import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InvalidRequestError } from "../../src/errors.js";
import { parseChatRequest } from "../../src/openai/chatRequest.js";
import type { SamplingDefaults } from "../../src/wire/sampling.js";

const defaults: SamplingDefaults = { temperature: 0.6, maxNewTokens: 256, maxNewTokensLimit: 1024 };
const user = { role: "user", content: "hi" };
const weather = { type: "function", function: { name: "weather", parameters: { type: "object", properties: { city: { type: "string" } } } } };

/** The 400 a body gets, as the param it names. */
function refusedParam(body: unknown): string | null {
    try {
        parseChatRequest(body, {}, defaults);
    } catch (error) {
        assert.ok(error instanceof InvalidRequestError, String(error));
        return error.param;
    }
    assert.fail("the request was accepted");
}

describe("parseChatRequest: OpenAI chat wire → the core's request", () => {
    it("applies Maple's defaults to a minimal request", () => {
        const chat = parseChatRequest({ messages: [user] }, {}, defaults);
        assert.deepEqual(chat.messages, [{ role: "user", content: "hi" }]);
        assert.deepEqual(chat.sampling, {
            temperature: 0.6, topP: 0.95, topK: 20, minP: undefined, seed: undefined, repetitionPenalty: undefined,
            presencePenalty: undefined, frequencyPenalty: undefined, ignoreEos: undefined, logitBias: undefined
        });
        assert.equal(chat.maxTokens, 256);
        assert.deepEqual(chat.stop, []);
        assert.equal(chat.n, 1);
        assert.equal(chat.stream, false);
        assert.equal(chat.includeUsage, false);
        assert.equal(chat.includeReasoning, true);
        assert.deepEqual(chat.toolChoice, { type: "none" });
        assert.deepEqual(chat.tools, []);
        assert.equal(chat.answer, undefined);
        assert.equal(chat.logprobs, undefined);
        assert.equal(chat.grammar, undefined);
        assert.deepEqual(chat.templateKwargs, {});
        assert.equal(chat.reasoning, undefined);
    });

    it("reads reasoning_effort into the reasoning switch (it was dropped before), beside chat_template_kwargs", () => {
        const parse = (fields: Record<string, unknown>): ReturnType<typeof parseChatRequest> => parseChatRequest({ messages: [user], ...fields }, {}, defaults);
        assert.deepEqual(parse({ reasoning_effort: "low" }).reasoning, { enabled: true, effort: "low" });
        assert.deepEqual(parse({ reasoning_effort: "none" }).reasoning, { enabled: false });
        assert.deepEqual(parse({ reasoning_effort: "xhigh", chat_template_kwargs: { x: 1 } }), { ...parse({ reasoning_effort: "high", chat_template_kwargs: { x: 1 } }) });
        assert.throws(() => parse({ reasoning_effort: "extreme" }), (error: unknown) => error instanceof InvalidRequestError && error.param === "reasoning_effort");
    });

    it("converts sampling fields: top_k -1 means none, the seed wraps to 32 bits, -100 bans a token, max tokens are capped", () => {
        const chat = parseChatRequest({
            messages: [user], temperature: 0, top_k: -1, seed: 2 ** 32 + 7, logit_bias: { 5: -100, 6: 2.5 },
            max_completion_tokens: 5000, max_tokens: 3, stop: "END", n: 2, logprobs: true, top_logprobs: 3,
            stream: true, stream_options: { include_usage: true }, chat_template_kwargs: { enable_thinking: false }, include_reasoning: false
        }, {}, defaults);
        assert.equal(chat.sampling.temperature, 0);
        assert.equal(chat.sampling.topK, 0);
        assert.equal(chat.sampling.seed, 7);
        assert.deepEqual([...chat.sampling.logitBias!], [[5, Number.NEGATIVE_INFINITY], [6, 2.5]]);
        // max_completion_tokens wins over max_tokens, and is capped at the limit.
        assert.equal(chat.maxTokens, 1024);
        assert.deepEqual(chat.stop, ["END"]);
        assert.equal(chat.n, 2);
        assert.deepEqual(chat.logprobs, { top: 3 });
        assert.equal(chat.stream, true);
        assert.equal(chat.includeUsage, true);
        assert.deepEqual(chat.templateKwargs, { enable_thinking: false });
        assert.equal(chat.includeReasoning, false);
    });

    it("reads an AI SDK tool loop: assistant reasoning and tool calls, then the tool's answer", () => {
        const chat = parseChatRequest({
            messages: [
                { role: "system", content: [{ type: "text", text: "be " }, { type: "text", text: "brief" }] },
                user,
                { role: "assistant", content: null, reasoning: "think", tool_calls: [{ id: "c1", type: "function", function: { name: "weather", arguments: "{\"city\":\"Oslo\"}" } }, { function: { name: "weather" } }] },
                { role: "tool", tool_call_id: "c1", content: "sunny" }
            ],
            tools: [weather]
        }, {}, defaults);
        assert.deepEqual(chat.messages, [
            { role: "system", content: "be brief" },
            { role: "user", content: "hi" },
            {
                role: "assistant", content: null, reasoningContent: "think",
                toolCalls: [{ id: "c1", name: "weather", arguments: "{\"city\":\"Oslo\"}" }, { id: "call_2_1", name: "weather", arguments: "{}" }]
            },
            { role: "tool", content: "sunny", toolCallId: "c1" }
        ]);
        assert.deepEqual(chat.toolChoice, { type: "auto" });
        assert.deepEqual(chat.tools, [{ name: "weather", parameters: weather.function.parameters }]);
        assert.equal(chat.answer, undefined);
    });

    it("turns tool_choice and response_format into the answer's grammar constraint", () => {
        const named = parseChatRequest({ messages: [user], tools: [weather, { type: "function", function: { name: "other" } }], tool_choice: { type: "function", function: { name: "weather" } } }, {}, defaults);
        assert.deepEqual(named.toolChoice, { type: "function", name: "weather" });
        assert.deepEqual(named.tools.map((tool) => tool.name), ["weather"]);
        assert.ok(named.answer?.toolCalls !== undefined && named.answer.json === undefined);
        assert.equal(named.answer.toolCalls.parallel, true);

        const none = parseChatRequest({ messages: [user], tools: [weather], tool_choice: "none" }, {}, defaults);
        assert.deepEqual(none.tools, []);
        assert.equal(none.answer, undefined);

        const json = parseChatRequest({ messages: [user], response_format: { type: "json_object" } }, {}, defaults);
        assert.deepEqual(json.answer, { json: { schema: undefined } });

        const either = parseChatRequest({
            messages: [user], tools: [weather], parallel_tool_calls: false,
            response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object", properties: { a: { type: "string" } } } } }
        }, {}, defaults);
        assert.ok(either.answer?.json?.schema !== undefined);
        assert.equal(either.answer.toolCalls?.parallel, false);
    });

    it("refuses two tools of one name, as Anthropic and Responses do", () => {
        assert.equal(refusedParam({ messages: [user], tools: [weather, weather] }), "tools[1].function.name");
    });

    it("takes the conversation key from prompt_cache_key, else user, else X-Session-Id", () => {
        assert.equal(parseChatRequest({ messages: [user], prompt_cache_key: "k", user: "u" }, { "x-session-id": "s" }, defaults).cacheKey, "prompt_cache_key:k");
        assert.equal(parseChatRequest({ messages: [user], user: "u" }, { "x-session-id": "s" }, defaults).cacheKey, "user:u");
        assert.equal(parseChatRequest({ messages: [user] }, { "x-session-id": "s" }, defaults).cacheKey, "session:s");
        assert.equal(parseChatRequest({ messages: [user] }, {}, defaults).cacheKey, undefined);
    });

    it("blank tool call arguments are none ({})", () => {
        const chat = parseChatRequest({ messages: [{ role: "assistant", content: null, tool_calls: [{ id: "c", function: { name: "weather", arguments: "" } }] }, user] }, {}, defaults);
        const [turn] = chat.messages;
        assert.ok(turn?.role === "assistant");
        assert.equal(turn.toolCalls?.[0]?.arguments, "{}");
    });

    it("refuses what it cannot serve with a 400 naming the field", () => {
        assert.equal(refusedParam({ messages: [] }), "messages");
        assert.equal(refusedParam({ messages: [{ role: "robot", content: "x" }] }), "messages[0].role");
        assert.equal(refusedParam({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }] }), "messages[0].content[0].type");
        assert.equal(refusedParam({ messages: [user, { role: "tool", tool_call_id: "nope", content: "x" }] }), "messages[1].tool_call_id");
        assert.equal(refusedParam({ messages: [{ role: "assistant", content: null, tool_calls: [{ function: { name: "f", arguments: "[1]" } }] }] }),
            "messages[0].tool_calls[0].function.arguments");
        assert.equal(refusedParam({ messages: [user], top_logprobs: 2 }), "top_logprobs");
        assert.equal(refusedParam({ messages: [user], tool_choice: "required" }), "tool_choice");
        assert.equal(refusedParam({ messages: [user], tools: [weather], tool_choice: { type: "function", function: { name: "missing" } } }), "tool_choice");
        assert.equal(refusedParam({ messages: [user], response_format: { type: "xml" } }), "response_format.type");
        assert.equal(refusedParam({ messages: [user], response_format: { type: "json_object" }, grammar: "root ::= \"a\"" }), "grammar");
        assert.equal(refusedParam({ messages: [user], grammar: "root ::= [z-a]" }), "grammar");
        assert.equal(refusedParam({ messages: [user], tools: [{ type: "function", function: { name: "f", parameters: { type: "string", pattern: "a+" } } }], tool_choice: "required" }),
            "tools[0].function.parameters");
        assert.equal(refusedParam("not an object"), "body");
    });
});

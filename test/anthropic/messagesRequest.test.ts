import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { anthropicErrorFormat, type AnthropicErrorBody } from "../../src/anthropic/errorFormat.js";
import { parseMessagesPrompt, parseMessagesRequest } from "../../src/anthropic/messagesRequest.js";
import { thinkingSignature } from "../../src/anthropic/thinkingSignature.js";
import type { MapleError} from "../../src/errors.js";
import { AuthenticationError, EngineOverloadedError, InvalidRequestError, ModelLoadingError, NotFoundError, PayloadTooLargeError, ServerError } from "../../src/errors.js";

/** Anthropic's request → Maple's internal request, and Maple's errors → Anthropic's shape. */

const defaults = { temperature: 0.6, maxNewTokens: 4096, maxNewTokensLimit: 32768 };
const parse = (body: Record<string, unknown>) => parseMessagesRequest({ model: "m", max_tokens: 100, ...body }, {}, defaults);
const refused = (body: Record<string, unknown>): InvalidRequestError => {
    try {
        parse(body);
    } catch (error) {
        assert.ok(error instanceof InvalidRequestError, String(error));
        return error;
    }
    return assert.fail("expected a 400");
};
const weather = { name: "get_weather", description: "Weather", input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };

describe("Messages request", () => {
    it("system (string or blocks with cache_control), turns, sampling and stop sequences", () => {
        const request = parse({
            system: [{ type: "text", text: "You are terse." }, { type: "text", text: "Be kind.", cache_control: { type: "ephemeral" } }],
            messages: [{ role: "user", content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }, { type: "text", text: "there" }] }],
            temperature: 0, top_p: 0.5, top_k: 3, stop_sequences: ["END"], stream: true, metadata: { user_id: "u" },
            max_tokens: 100_000, seed: 7, context_management: { edits: [] }, output_config: { effort: "medium" }
        });
        assert.deepEqual(request.messages, [{ role: "system", content: "You are terse.\nBe kind." }, { role: "user", content: "hi\nthere" }]);
        assert.equal(request.sampling.temperature, 0);
        assert.equal(request.sampling.topP, 0.5);
        assert.equal(request.sampling.topK, 3);
        assert.equal(request.sampling.seed, 7);
        assert.deepEqual(request.stop, ["END"]);
        assert.equal(request.stream, true);
        assert.equal(request.maxTokens, 32768, "capped at the limit, not refused");
        assert.deepEqual(parse({ system: "Short.", messages: [{ role: "user", content: "x" }] }).messages[0], { role: "system", content: "Short." });
    });

    it("a tool-use round: thinking (also omitted, carried by the signature), tool_use, tool_result with is_error", () => {
        const request = parse({
            tools: [weather],
            messages: [
                { role: "user", content: "Weather in Lagos and Accra?" },
                { role: "system", content: [{ type: "text", text: "# Environment" }] },
                {
                    role: "assistant", content: [
                        { type: "thinking", thinking: "", signature: thinkingSignature("Two cities.") },
                        { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj" },
                        { type: "text", text: "Checking." },
                        { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Lagos" } },
                        { type: "tool_use", id: "toolu_2", name: "get_weather", input: { city: "Accra" } }
                    ]
                },
                {
                    role: "user", content: [
                        { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "31 C" }], cache_control: { type: "ephemeral" } },
                        { type: "tool_result", tool_use_id: "toolu_2", content: "timeout", is_error: true },
                        { type: "text", text: "Summarise." }
                    ]
                }
            ]
        });
        assert.deepEqual(request.messages, [
            { role: "user", content: "Weather in Lagos and Accra?" },
            { role: "system", content: "# Environment" },
            {
                role: "assistant", content: "Checking.", reasoningContent: "Two cities.", toolCalls: [
                    { id: "toolu_1", name: "get_weather", arguments: "{\"city\":\"Lagos\"}" },
                    { id: "toolu_2", name: "get_weather", arguments: "{\"city\":\"Accra\"}" }
                ]
            },
            { role: "tool", content: "31 C", toolCallId: "toolu_1" },
            { role: "tool", content: "Error: timeout", toolCallId: "toolu_2" },
            { role: "user", content: "Summarise." }
        ]);
        assert.deepEqual(request.toolChoice, { type: "auto" });
        assert.equal(request.answer, undefined, "auto is not enforced");
    });

    it("tool_choice: any, tool, none, disable_parallel_tool_use", () => {
        const tools = [weather, { name: "ping", input_schema: { type: "object" } }];
        const messages = [{ role: "user", content: "x" }];
        const any = parse({ tools, messages, tool_choice: { type: "any" } });
        assert.deepEqual(any.toolChoice, { type: "required" });
        assert.equal(any.answer?.toolCalls?.parallel, true);
        const one = parse({ tools, messages, tool_choice: { type: "tool", name: "ping", disable_parallel_tool_use: true } });
        assert.deepEqual(one.toolChoice, { type: "function", name: "ping" });
        assert.deepEqual(one.tools.map((tool) => tool.name), ["ping"]);
        assert.equal(one.answer?.toolCalls?.parallel, false);
        const none = parse({ tools, messages, tool_choice: { type: "none" } });
        assert.deepEqual(none.tools, []);
        assert.equal(refused({ tools, messages, tool_choice: { type: "tool", name: "nope" } }).param, "tool_choice.name");
        assert.equal(refused({ messages, tool_choice: { type: "any" } }).param, "tool_choice");
        assert.equal(refused({ tools, messages, tool_choice: { type: "any" }, grammar: "root ::= \"x\"" }).param, "grammar");
    });

    it("thinking: enabled with a budget, adaptive, disabled, display omitted, through the one reasoning switch", () => {
        const messages = [{ role: "user", content: "x" }];
        const enabled = parse({ messages, thinking: { type: "enabled", budget_tokens: 50 } });
        assert.equal(enabled.thinkingBudget, 50);
        assert.deepEqual(enabled.reasoning, { enabled: true, effort: undefined });
        const adaptive = parse({ messages, thinking: { type: "adaptive", display: "omitted" } });
        assert.equal(adaptive.thinkingBudget, undefined);
        assert.equal(adaptive.omitThinking, true);
        assert.deepEqual(adaptive.reasoning, { enabled: true, effort: undefined });
        assert.deepEqual(parse({ messages, thinking: { type: "disabled" } }).reasoning, { enabled: false });
        assert.equal(parse({ messages }).reasoning, undefined, "absent: the template's default");
        // chat_template_kwargs are kept apart: they win over the switch when the prompt is rendered.
        assert.deepEqual(parse({ messages, thinking: { type: "disabled" }, chat_template_kwargs: { enable_thinking: true } }).templateKwargs, { enable_thinking: true });
        assert.equal(refused({ messages, thinking: { type: "enabled", budget_tokens: 100 } }).param, "thinking.budget_tokens");
        assert.equal(refused({ messages, thinking: { type: "sometimes" } }).param, "thinking.type");
    });

    it("deferred tools stay out of the prompt; Anthropic's own tool types are refused by name", () => {
        const request = parse({ messages: [{ role: "user", content: "x" }], tools: [weather, { name: "Later", input_schema: { type: "object" }, defer_loading: true }] });
        assert.deepEqual(request.tools.map((tool) => tool.name), ["get_weather"]);
        assert.equal(refused({ messages: [{ role: "user", content: "x" }], tools: [{ type: "bash_20250124", name: "bash" }] }).param, "tools[0].type");
        // A schema the grammar cannot enforce is fine while nothing enforces it (Claude Code's tools use `minimum`).
        const unenforceable = { name: "x", input_schema: { type: "object", properties: { n: { type: "integer", minimum: 1 } } } };
        assert.equal(parse({ messages: [{ role: "user", content: "x" }], tools: [unenforceable] }).tools.length, 1);
        assert.equal(refused({ messages: [{ role: "user", content: "x" }], tools: [unenforceable], tool_choice: { type: "any" } }).param, "tools[0].input_schema");
    });

    it("refuses with the param named: images, documents, unknown roles, prefill, unknown tool ids, no max_tokens", () => {
        const image = { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } };
        const imageError = refused({ messages: [{ role: "user", content: [{ type: "text", text: "see" }, image] }] });
        assert.equal(imageError.param, "messages[0].content[1].type");
        assert.match(imageError.message, /image.*text only/);
        assert.equal(refused({ system: [{ type: "document", source: {} }], messages: [{ role: "user", content: "x" }] }).param, "system[0].type");
        const inResult = refused({
            messages: [
                { role: "user", content: "x" },
                { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "f", input: {} }] },
                { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: [image] }] }
            ]
        });
        assert.equal(inResult.param, "messages[2].content[0].content[0].type");
        assert.equal(refused({ messages: [{ role: "tool", content: "x" }] }).param, "messages[0].role");
        assert.equal(refused({ messages: [{ role: "user", content: "x" }, { role: "assistant", content: "The answer is" }] }).param, "messages[1].role");
        assert.equal(refused({ messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "nope", content: "x" }] }] }).param,
            "messages[0].content[0].tool_use_id");
        assert.equal(refused({ max_tokens: undefined, messages: [{ role: "user", content: "x" }] }).param, "max_tokens");
        assert.equal(refused({ messages: [{ role: "assistant", content: [{ type: "tool_use", id: "t", name: "f", input: "x" }] }, { role: "user", content: "x" }] }).param,
            "messages[0].content[0].input");
    });

    it("refuses two tools of one name (a deferred one too), naming the second", () => {
        const error = refused({ messages: [{ role: "user", content: "x" }], tools: [weather, { ...weather, defer_loading: true }] });
        assert.equal(error.param, "tools[1].name");
        assert.equal(error.message, `Two tools are named '${weather.name}'; the model calls tools by name, so names must be unique.`);
    });

    it("takes the conversation key from metadata.user_id (OpenAI's user), else X-Session-Id", () => {
        const body = { model: "m", max_tokens: 100, messages: [{ role: "user", content: "x" }] };
        assert.equal(parseMessagesRequest({ ...body, metadata: { user_id: "u1" } }, { "x-session-id": "s" }, defaults).cacheKey, "user:u1");
        assert.equal(parseMessagesRequest(body, { "x-session-id": "s" }, defaults).cacheKey, "session:s");
        assert.equal(parseMessagesRequest({ ...body, user: "not-anthropic", metadata: "x" }, {}, defaults).cacheKey, undefined);
    });

    it("reads every shared sampling field, as the OpenAI formats do", () => {
        const request = parse({ messages: [{ role: "user", content: "x" }], temperature: 0, top_p: 0.5, top_k: 5, min_p: 0.1, repetition_penalty: 1.2,
            presence_penalty: 0.5, frequency_penalty: 0.25, seed: 3, ignore_eos: true, logit_bias: { 7: 1 } });
        assert.deepEqual({ ...request.sampling, logitBias: [...request.sampling.logitBias!] }, {
            temperature: 0, topP: 0.5, topK: 5, minP: 0.1, seed: 3, repetitionPenalty: 1.2, presencePenalty: 0.5, frequencyPenalty: 0.25,
            ignoreEos: true, logitBias: [[7, 1]]
        });
    });

    it("count_tokens reads the prompt part: no max_tokens needed", () => {
        const prompt = parseMessagesPrompt({ model: "m", system: "s", messages: [{ role: "user", content: "x" }], tools: [weather] });
        assert.equal(prompt.messages.length, 2);
        assert.equal(prompt.tools.length, 1);
    });
});

describe("Anthropic error shape", () => {
    it("maps statuses and types; overload is 529 with Retry-After", () => {
        const cases: [MapleError, number, string][] = [
            [new InvalidRequestError("bad", "messages"), 400, "invalid_request_error"],
            [new AuthenticationError(), 401, "authentication_error"],
            [new NotFoundError("no such model", "model"), 404, "not_found_error"],
            [new PayloadTooLargeError("too big"), 413, "request_too_large"],
            [new ServerError(), 500, "api_error"],
            [new EngineOverloadedError("queue full", "queue_full"), 529, "overloaded_error"],
            [new ModelLoadingError(), 529, "overloaded_error"]
        ];
        const answer = (error: MapleError) => anthropicErrorFormat.response(error) as { status: number; headers: Record<string, string>; body: AnthropicErrorBody };
        for (const [error, status, type] of cases) {
            const { status: answered, body } = answer(error);
            assert.equal(answered, status, error.message);
            assert.equal(body.type, "error");
            assert.equal(body.error.type, type);
            assert.deepEqual(anthropicErrorFormat.streamEvents(error), [{ event: "error", data: body }]);
        }
        assert.equal(answer(new EngineOverloadedError("queue full", "queue_full")).headers["retry-after"], "5");
        assert.equal(answer(new InvalidRequestError("must be text", "messages[0].content")).body.error.message, "messages[0].content: must be text");
        assert.equal(answer(new InvalidRequestError("Invalid value for 'top_k': x", "top_k")).body.error.message, "Invalid value for 'top_k': x");
    });
});

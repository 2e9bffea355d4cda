import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InvalidRequestError, NotFoundError } from "../../src/errors.js";
import { encodeReasoning } from "../../src/responses/reasoningCarrier.js";
import { parseResponsesRequest, type ItemLookup } from "../../src/responses/responsesRequest.js";
import type { RequestHeaders } from "../../src/wire/conversationKey.js";

/** The Responses wire → the core's request, unit by unit (the route's behaviour is in test/http/responses.test.ts). */

const defaults = { temperature: 0.6, maxNewTokens: 256, maxNewTokensLimit: 1024 };
const noItems: ItemLookup = () => undefined;
const parse = (body: Record<string, unknown>, headers: RequestHeaders = {}, lookup: ItemLookup = noItems) => parseResponsesRequest(body, headers, defaults, lookup);
const weather = { type: "function", name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } };

function refused(body: Record<string, unknown>, lookup: ItemLookup = noItems): InvalidRequestError {
    try {
        parse(body, {}, lookup);
    } catch (error) {
        assert.ok(error instanceof InvalidRequestError || error instanceof NotFoundError, String(error));
        return error as InvalidRequestError;
    }
    return assert.fail("expected a 4xx");
}

describe("parseResponsesRequest", () => {
    it("a string input is one user turn; Maple's defaults apply; the input item gets an id", () => {
        const request = parse({ input: "Hi" });
        assert.deepEqual(request.input, [{ role: "user", content: "Hi" }]);
        assert.equal(request.inputItems.length, 1);
        assert.match(String(request.inputItems[0]!["id"]), /^msg_[0-9a-f]{24}$/);
        assert.deepEqual(request.toolChoice, { type: "none" });
        assert.deepEqual(request.tools, []);
        assert.equal(request.store, true);
        assert.equal(request.stream, false);
        assert.equal(request.maxTokens, 256);
        assert.equal(request.sampling.temperature, 0.6);
        assert.equal(request.instructions, undefined);
        assert.equal(request.previousResponseId, undefined);
        assert.equal(request.cacheKey, undefined);
        assert.deepEqual(request.templateKwargs, {});
    });

    it("takes the conversation key from prompt_cache_key, else user, else X-Session-Id", () => {
        assert.equal(parse({ input: "Hi", prompt_cache_key: "codex-1", user: "u" }, { "x-session-id": "s" }).cacheKey, "prompt_cache_key:codex-1");
        assert.equal(parse({ input: "Hi", user: "u" }, { "x-session-id": "s" }).cacheKey, "user:u");
        assert.equal(parse({ input: "Hi" }, { "x-session-id": "s" }).cacheKey, "session:s");
    });

    it("reads the shared sampling fields and the length, stop and stream fields", () => {
        const request = parse({
            input: "Hi", temperature: 0, top_p: 0.5, top_k: 5, min_p: 0.1, repetition_penalty: 1.2, seed: 3, logit_bias: { 7: -100 },
            max_output_tokens: 5000, max_tokens: 3, stop: ["END"], stream: true
        });
        assert.equal(request.sampling.temperature, 0);
        assert.equal(request.sampling.topK, 5);
        assert.equal(request.sampling.minP, 0.1);
        assert.equal(request.sampling.repetitionPenalty, 1.2);
        assert.equal(request.sampling.logitBias?.get(7), Number.NEGATIVE_INFINITY);
        // max_output_tokens wins over max_tokens, capped at the limit.
        assert.equal(request.maxTokens, 1024);
        assert.deepEqual(request.stop, ["END"]);
        assert.equal(request.stream, true);
    });

    it("folds reasoning, assistant text and calls into one assistant turn; outputs answer their call by id", () => {
        const request = parse({
            instructions: "Be brief.",
            input: [
                { type: "message", role: "user", content: [{ type: "input_text", text: "Weather " }, { type: "input_text", text: "in Lagos?" }] },
                { type: "reasoning", summary: [], encrypted_content: encodeReasoning("Look it up.") },
                { type: "message", role: "assistant", content: [{ type: "output_text", text: "Checking." }] },
                { type: "function_call", call_id: "call_1", name: "get_weather", arguments: "{\"city\":\"Lagos\"}" },
                { type: "custom_tool_call", call_id: "call_2", name: "apply_patch", input: "*** patch" },
                { type: "function_call_output", call_id: "call_1", output: "Sunny" },
                { type: "custom_tool_call_output", call_id: "call_2", output: [{ type: "input_text", text: "Done" }] }
            ]
        });
        assert.equal(request.instructions, "Be brief.");
        assert.deepEqual(request.input, [
            { role: "user", content: "Weather in Lagos?" },
            {
                role: "assistant", content: "Checking.", reasoningContent: "Look it up.",
                toolCalls: [
                    { id: "call_1", name: "get_weather", arguments: "{\"city\":\"Lagos\"}" },
                    { id: "call_2", name: "apply_patch", arguments: JSON.stringify({ input: "*** patch" }) }
                ]
            },
            { role: "tool", content: "Sunny", toolCallId: "call_1", name: "get_weather" },
            { role: "tool", content: "Done", toolCallId: "call_2", name: "apply_patch" }
        ]);
        assert.equal(request.inputItems.length, 7);
        assert.ok(request.inputItems.every((item) => typeof item["id"] === "string"));
    });

    it("a function call without arguments, or with blank ones, has none ({})", () => {
        const request = parse({ input: [{ type: "function_call", call_id: "c", name: "f" }, { type: "function_call", call_id: "d", name: "f", arguments: " " }] });
        const [turn] = request.input;
        assert.ok(turn?.role === "assistant");
        assert.deepEqual(turn.toolCalls?.map((call) => call.arguments), ["{}", "{}"]);
    });

    it("refuses function call arguments that are not a JSON object, as chat does", () => {
        for (const args of ["[1]", "not json", "42"]) {
            const error = refused({ input: [{ type: "function_call", call_id: "c", name: "f", arguments: args }] });
            assert.equal(error.param, "input[0].arguments");
            assert.equal(error.message, "Tool call arguments must be a JSON object encoded as a string.");
        }
    });

    it("replaces an item_reference by the stored item; an unknown one is a 404 naming it", () => {
        const stored = { id: "msg_1", type: "message", role: "assistant", content: [{ type: "output_text", text: "Earlier." }] };
        const request = parse({ input: [{ type: "item_reference", id: "msg_1" }, { role: "user", content: "Next?" }] }, {}, (id) => (id === "msg_1" ? stored : undefined));
        assert.deepEqual(request.input, [{ role: "assistant", content: "Earlier." }, { role: "user", content: "Next?" }]);
        const error = refused({ input: [{ type: "item_reference", id: "msg_2" }] });
        assert.ok(error instanceof NotFoundError);
        assert.equal(error.param, "input[0].id");
    });

    it("flattens namespace tools; a custom tool takes one string input; the tool choice picks what the template is shown", () => {
        const request = parse({
            input: "Hi",
            tools: [weather, { type: "custom", name: "apply_patch" }, { type: "namespace", name: "mcp", tools: [{ type: "function", name: "search" }] }],
            tool_choice: { type: "custom", name: "apply_patch" }
        });
        assert.deepEqual(request.offered.map((tool) => [tool.kind, tool.definition.name, tool.namespace]), [
            ["function", "get_weather", undefined], ["custom", "apply_patch", undefined], ["function", "search", "mcp"]
        ]);
        assert.deepEqual(request.toolChoice, { type: "function", name: "apply_patch" });
        assert.deepEqual(request.tools.map((tool) => tool.name), ["apply_patch"]);
        assert.ok(request.answer?.toolCalls !== undefined);
        assert.deepEqual(parse({ input: "Hi", tools: [weather] }).toolChoice, { type: "auto" });
    });

    it("turns text.format into the answer's constraint and reasoning.effort into the reasoning switch", () => {
        assert.deepEqual(parse({ input: "Hi", text: { format: { type: "json_object" } } }).answer, { json: { schema: undefined } });
        assert.equal(parse({ input: "Hi", text: { format: { type: "text" } } }).answer, undefined);
        assert.deepEqual(parse({ input: "Hi", reasoning: { effort: "none" } }).reasoning, { enabled: false });
        const minimal = parse({ input: "Hi", reasoning: { effort: "minimal" }, chat_template_kwargs: { enable_thinking: true } });
        assert.deepEqual([minimal.reasoning, minimal.templateKwargs], [{ enabled: false }, { enable_thinking: true }]);
        assert.deepEqual(parse({ input: "Hi", reasoning: { effort: "high" } }).reasoning, { enabled: true, effort: "high" });
        assert.equal(parse({ input: "Hi" }).reasoning, undefined);
    });

    it("echoes the request's settings for the response object", () => {
        const request = parse({ input: "Hi", store: false, prompt_cache_key: "k", user: "u", metadata: { a: "b" }, include: ["reasoning.encrypted_content"] });
        assert.equal(request.store, false);
        assert.equal(request.includeEncryptedReasoning, true);
        assert.equal(request.echo["prompt_cache_key"], "k");
        assert.equal(request.echo["user"], "u");
        assert.deepEqual(request.echo["metadata"], { a: "b" });
        assert.equal(request.echo["store"], false);
        assert.equal(request.echo["tool_choice"], "auto");
    });

    it("refuses what it cannot serve with the param named", () => {
        const cases: [Record<string, unknown>, string][] = [
            [{}, "input"],
            [{ input: "Hi", background: true }, "background"],
            [{ input: "Hi", conversation: "conv_1" }, "conversation"],
            [{ input: "Hi", prompt: { id: "p" } }, "prompt"],
            [{ input: "Hi", include: ["file_search_call.results"] }, "include[0]"],
            [{ input: "Hi", top_logprobs: 2 }, "top_logprobs"],
            [{ input: "Hi", text: { format: { type: "xml" } } }, "text.format.type"],
            [{ input: "Hi", text: { format: { type: "json_schema" } } }, "text.format.schema"],
            [{ input: "Hi", text: { format: { type: "json_object" } }, grammar: "root ::= \"a\"" }, "grammar"],
            [{ input: "Hi", tools: [{ type: "web_search" }] }, "tools[0].type"],
            [{ input: "Hi", tools: [{ type: "function" }] }, "tools[0].name"],
            [{ input: "Hi", tools: [{ type: "function", name: "f", parameters: [1] }] }, "tools[0].parameters"],
            [{ input: "Hi", tools: [weather, { type: "namespace", name: "n", tools: [weather] }] }, "tools"],
            [{ input: "Hi", tool_choice: "required" }, "tool_choice"],
            [{ input: "Hi", tools: [weather], tool_choice: { type: "custom", name: "get_weather" } }, "tool_choice.name"],
            [{ input: "Hi", tools: [weather], tool_choice: { type: "file_search" } }, "tool_choice.type"],
            [{ input: [{ type: "message", role: "robot", content: "x" }] }, "input[0].role"],
            [{ input: [{ role: "user", content: [{ type: "input_image", image_url: "x" }] }] }, "input[0].content[0].type"],
            [{ input: [{ role: "user", content: [{ type: "input_text" }] }] }, "input[0].content[0].text"],
            [{ input: [{ type: "function_call", name: "f" }] }, "input[0].call_id"],
            [{ input: [{ type: "function_call_output", output: "x" }] }, "input[0].call_id"],
            [{ input: [{ type: "web_search_call" }] }, "input[0].type"],
            [{ input: "Hi", temperature: 5 }, "temperature"]
        ];
        for (const [body, param] of cases) assert.equal(refused(body).param, param, JSON.stringify(body));
    });

    it("refuses two tools of one name, across namespaces too", () => {
        const error = refused({ input: "Hi", tools: [weather, { ...weather, description: "again" }] });
        assert.equal(error.message, "Two tools are named 'get_weather'; the model calls tools by name, so names must be unique.");
    });
});

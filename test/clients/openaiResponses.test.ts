import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import { zodTextFormat } from "openai/helpers/zod";
import type { FunctionTool, ResponseCreateParamsNonStreaming, ResponseFunctionToolCall } from "openai/resources/responses/responses";
import { z } from "zod";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { exact } from "../helpers/grammar.js";

/**
 * The official `openai` package's Responses API against a real Maple server, read the way an
 * application reads it. The random-weight model writes exact text through Maple's `grammar`
 * field (a body field the SDK passes through), which constrains the raw output.
 */

/** `grammar` is a Maple extension; the SDK sends unknown body fields as they are. */
const withGrammar = <T extends object>(params: T, text: string): T => ({ ...params, grammar: exact(text) });

const answerText = "Let me add.\n</think>\n\nThe answer is 4.";
const weatherCall = "ok\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lagos\"}}\n</tool_call>";
const weatherTool: FunctionTool = {
    type: "function", name: "get_weather", description: "Current weather for a city", strict: true,
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false }
};
const model = "maple-preview";

describe("openai SDK: Responses API", () => {
    let server: TestServer;
    let client: OpenAI;
    before(async () => {
        server = await startTestServer({ maxNewTokensLimit: 400, maxPromptTokens: 900 });
        client = server.client;
    });
    after(async () => server.close());

    it("responses.create: output_text, reasoning item, usage", async () => {
        const response = await client.responses.create(withGrammar({ model, input: "What is 2+2?", max_output_tokens: 64 } as ResponseCreateParamsNonStreaming, answerText));
        assert.equal(response.object, "response");
        assert.match(response.id, /^resp_/);
        assert.equal(response.status, "completed");
        assert.equal(response.output_text, "The answer is 4.");
        const reasoning = response.output.find((item) => item.type === "reasoning");
        assert.equal(reasoning?.type === "reasoning" ? reasoning.content?.[0]?.text : undefined, "Let me add.");
        assert.ok(response.usage!.output_tokens_details.reasoning_tokens > 0);
        assert.equal(response.usage!.total_tokens, response.usage!.input_tokens + response.usage!.output_tokens);
    });

    it("responses.create with tools, then the tool output sent back with previous_response_id", async () => {
        const first = await client.responses.create(withGrammar({ model, input: "Weather in Lagos?", tools: [weatherTool], max_output_tokens: 128 } as ResponseCreateParamsNonStreaming, weatherCall));
        const call = first.output.find((item): item is ResponseFunctionToolCall => item.type === "function_call");
        assert.ok(call !== undefined);
        assert.equal(call.name, "get_weather");
        assert.deepEqual(JSON.parse(call.arguments), { city: "Lagos" });

        const second = await client.responses.create(withGrammar({
            model, previous_response_id: first.id, tools: [weatherTool], max_output_tokens: 64,
            input: [{ type: "function_call_output", call_id: call.call_id, output: JSON.stringify({ sky: "sunny" }) }]
        } as ResponseCreateParamsNonStreaming, "Sunny.\n</think>\n\nLagos is sunny."));
        assert.equal(second.output_text, "Lagos is sunny.");
        assert.equal(second.previous_response_id, first.id);
        assert.ok(second.usage!.input_tokens_details.cached_tokens > 0, "the continued conversation hits the prefix cache");

        const retrieved = await client.responses.retrieve(second.id);
        assert.equal(retrieved.output_text, "Lagos is sunny.");
        const items = await client.responses.inputItems.list(second.id);
        assert.deepEqual(items.data.map((item) => item.type), ["function_call_output"]);
        await client.responses.delete(second.id);
        const gone = await client.responses.retrieve(second.id).then(() => undefined, (error: unknown) => error);
        assert.ok(gone instanceof OpenAI.NotFoundError);
    });

    it(".stream(): event helpers, reasoning and text deltas, finalResponse()", async () => {
        const stream = client.responses.stream(withGrammar({ model, input: "What is 2+2?", max_output_tokens: 64 }, answerText));
        let text = "";
        let reasoning = "";
        stream.on("response.output_text.delta", (event) => { text += event.delta; });
        stream.on("response.reasoning_text.delta", (event) => { reasoning += event.delta; });
        const final = await stream.finalResponse();
        assert.equal(text, "The answer is 4.");
        assert.equal(reasoning, "Let me add.");
        assert.equal(final.output_text, "The answer is 4.");
        assert.equal(final.status, "completed");
    });

    it("responses.parse with a zod text.format gives the parsed object", async () => {
        const Answer = z.object({ answer: z.number().int(), unit: z.enum(["apples", "pears"]), note: z.string().max(8) });
        for (const seed of [1, 2]) {
            const response = await client.responses.parse({
                model, input: "How many apples?", text: { format: zodTextFormat(Answer, "answer") }, temperature: 1,
                max_output_tokens: 200, reasoning: { effort: "none" }, ...({ seed } as object)
            });
            assert.equal(response.status, "completed", JSON.stringify(response.output));
            assert.ok(response.output_parsed !== null);
            assert.deepEqual(Answer.parse(response.output_parsed), response.output_parsed);
        }
    });

    it("a refused tool type surfaces as BadRequestError naming the param", async () => {
        const error = await client.responses.create({ model, input: "x", tools: [{ type: "web_search" }] }).then(() => undefined, (caught: unknown) => caught);
        assert.ok(error instanceof OpenAI.BadRequestError, String(error));
        assert.equal(error.param, "tools[0].type");
        assert.match(error.message, /web_search/);
    });
});

import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, Output, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { exact } from "../helpers/grammar.js";

/**
 * The Vercel AI SDK's own OpenAI provider (`@ai-sdk/openai`) with its default model,
 * `openai(id)`, which speaks the Responses API, against a real Maple server. The provider sends
 * only the fields it knows, so the test's fetch adds Maple's `grammar` field to each request's
 * body (from a queue, one per request) to make the random-weight model write exact output;
 * everything else is the SDK's own request, and Maple's answer goes back to it unchanged.
 */

const answerText = "Let me add.\n</think>\n\nThe answer is 4.";
const weatherCall = "ok\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lagos\"}}\n</tool_call>";
const sunnyText = "It is sunny.\n</think>\n\nLagos: 31 °C and sunny.";

interface RecordedCall {
    url: string;
    body: { input: Record<string, unknown>[]; store?: boolean; include?: string[]; [key: string]: unknown };
    status: number;
}

describe("AI SDK @ai-sdk/openai (Responses API) client", () => {
    let server: TestServer;
    let calls: RecordedCall[] = [];
    /** The raw outputs the next requests must produce, in order. */
    let grammars: string[] = [];
    let openai: ReturnType<typeof createOpenAI>;

    before(async () => {
        server = await startTestServer({ maxNewTokensLimit: 400, maxPromptTokens: 900 });
        openai = createOpenAI({
            baseURL: `${server.url}/v1`, apiKey: "unused",
            fetch: async (input, init) => {
                const body = JSON.parse(String(init?.body)) as RecordedCall["body"];
                const next = grammars.shift();
                const sent = next === undefined ? body : { ...body, grammar: exact(next) };
                const response = await fetch(input, { ...init, body: JSON.stringify(sent) });
                calls.push({ url: String(input), body, status: response.status });
                return response;
            }
        });
    });
    beforeEach(() => {
        calls = [];
        grammars = [];
    });
    after(async () => server.close());

    const weatherTool = (seen: string[]) => tool({
        description: "Current weather for a city",
        inputSchema: z.object({ city: z.string() }),
        execute: async ({ city }) => {
            seen.push(city);
            return { city, temperature_c: 31, sky: "sunny" };
        }
    });

    it("generateText with the default openai(model): text, reasoning, usage", async () => {
        grammars = [answerText];
        const result = await generateText({ model: openai("maple-preview"), prompt: "What is 2+2?", maxOutputTokens: 64, maxRetries: 0 });
        assert.match(calls[0]!.url, /\/v1\/responses$/);
        assert.equal(result.text, "The answer is 4.");
        assert.equal(result.reasoningText, "Let me add.");
        assert.equal(result.finishReason, "stop");
        assert.ok(result.usage.outputTokenDetails.reasoningTokens! > 0);
        assert.equal(typeof result.usage.inputTokenDetails.cacheReadTokens, "number");
    });

    it("streamText: reasoning deltas surface as reasoning, then text deltas", async () => {
        grammars = [answerText];
        const result = streamText({
            model: openai("maple-preview"), prompt: "What is 2+2?", maxOutputTokens: 64, maxRetries: 0,
            onError: ({ error }) => { throw error; }
        });
        const order: string[] = [];
        let reasoning = "";
        let text = "";
        for await (const part of result.fullStream) {
            if (part.type === "error") assert.fail(`error part: ${String(part.error)}`);
            if (part.type === "reasoning-delta") reasoning += part.text;
            if (part.type === "text-delta") text += part.text;
            if ((part.type === "reasoning-delta" || part.type === "text-delta") && order.at(-1) !== part.type) order.push(part.type);
        }
        assert.deepEqual(order, ["reasoning-delta", "text-delta"]);
        assert.equal(reasoning, "Let me add.");
        assert.equal(text, "The answer is 4.");
        assert.equal(await result.finishReason, "stop");
    });

    it("a two-step tool loop (stopWhen): the reasoning and items it sends back are accepted", async () => {
        grammars = [weatherCall, sunnyText];
        const seen: string[] = [];
        const result = await generateText({
            model: openai("maple-preview"), prompt: "Weather in Lagos?", maxOutputTokens: 128, maxRetries: 0,
            tools: { get_weather: weatherTool(seen) }, stopWhen: stepCountIs(2)
        });
        assert.deepEqual(calls.map((call) => call.status), [200, 200]);
        assert.deepEqual(seen, ["Lagos"]);
        assert.equal(result.text, "Lagos: 31 °C and sunny.");
        assert.equal(result.steps.length, 2);
        // With store (the default) the SDK refers to the first response's reasoning by id.
        const sentBack = calls[1]!.body.input.map((item) => item["type"]);
        assert.ok(sentBack.includes("item_reference"), JSON.stringify(sentBack));
        assert.ok(sentBack.includes("function_call_output"), JSON.stringify(sentBack));
        assert.ok(result.steps[1]!.usage.inputTokenDetails.cacheReadTokens! > 0, "the second step reuses the first step's prompt");
    });

    it("the same loop without store: reasoning goes back as items with encrypted_content and summary only", async () => {
        grammars = [weatherCall, sunnyText];
        const result = await generateText({
            model: openai("maple-preview"), prompt: "Weather in Lagos?", maxOutputTokens: 128, maxRetries: 0,
            tools: { get_weather: weatherTool([]) }, stopWhen: stepCountIs(2),
            providerOptions: { openai: { store: false, forceReasoning: true } }
        });
        assert.deepEqual(calls.map((call) => call.status), [200, 200]);
        assert.deepEqual(calls[0]!.body.include, ["reasoning.encrypted_content"]);
        const reasoning = calls[1]!.body.input.find((item) => item["type"] === "reasoning");
        assert.ok(reasoning !== undefined, JSON.stringify(calls[1]!.body.input));
        assert.equal(reasoning["content"], undefined, "the SDK sends no content back");
        assert.equal(typeof reasoning["encrypted_content"], "string");
        assert.equal(result.text, "Lagos: 31 °C and sunny.");
    });

    it("Output.object: a typed object, with thinking off through reasoningEffort 'none'", async () => {
        const Order = z.object({ item: z.enum(["book", "pen"]), count: z.number().int(), note: z.string().max(8) });
        const result = await generateText({
            model: openai("maple-preview"), output: Output.object({ schema: Order }), prompt: "Describe an order.", maxOutputTokens: 200, maxRetries: 0,
            providerOptions: { openai: { forceReasoning: true, reasoningEffort: "none" } }
        });
        const format = (calls[0]!.body["text"] as { format: { type: string } }).format;
        assert.equal(format.type, "json_schema");
        assert.deepEqual(calls[0]!.body["reasoning"], { effort: "none" });
        assert.deepEqual(Order.parse(result.output), result.output);
    });
});

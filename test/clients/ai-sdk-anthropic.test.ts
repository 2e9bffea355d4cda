import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { createAnthropic } from "@ai-sdk/anthropic";
import { APICallError, generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";
import { exact as exactly } from "../helpers/grammar.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";

/**
 * The Vercel AI SDK's Anthropic provider (`@ai-sdk/anthropic` with `ai` 6) against a real Maple
 * server at its `baseURL`. The provider has no way to add a body field of its own, so the test's
 * fetch adds Maple's `grammar` (the next of `grammars`) to each request body, which is otherwise
 * the provider's own.
 */

interface SentBody { messages: { role: string; content: { type: string; [key: string]: unknown }[] }[]; thinking?: unknown; stream?: boolean; [key: string]: unknown }

describe("AI SDK @ai-sdk/anthropic provider", () => {
    let server: TestServer;
    let anthropic: ReturnType<typeof createAnthropic>;
    let grammars: string[] = [];
    let sent: { body: SentBody; status: number; headers: Headers }[] = [];

    before(async () => {
        server = await startTestServer({ parallel: 1, apiKey: "sk-ant-maple" });
        anthropic = createAnthropic({
            baseURL: `${server.url}/v1`, apiKey: "sk-ant-maple",
            fetch: async (input, init) => {
                const body = JSON.parse(String(init?.body)) as SentBody;
                const grammar = grammars.shift();
                const response = await fetch(input, { ...init, body: JSON.stringify(grammar === undefined ? body : { ...body, grammar }) });
                sent.push({ body, status: response.status, headers: new Headers(init?.headers) });
                return response;
            }
        });
    });
    beforeEach(() => {
        grammars = [];
        sent = [];
    });
    after(async () => server.close());

    const thinking = { anthropic: { thinking: { type: "enabled", budgetTokens: 48 } } };
    const weatherTool = (seen: string[]) => tool({
        description: "Current weather for a city",
        inputSchema: z.object({ city: z.string() }),
        execute: async ({ city }) => {
            seen.push(city);
            return { city, temperature_c: 31 };
        }
    });

    it("generateText with reasoning: text, reasoning with its signature, usage", async () => {
        grammars = [exactly("Let me add.\n</think>\n\nThe answer is 4.")];
        const result = await generateText({ model: anthropic("maple-preview"), prompt: "What is 2+2?", maxOutputTokens: 64, maxRetries: 0, providerOptions: thinking });
        assert.equal(sent[0]!.headers.get("x-api-key"), "sk-ant-maple");
        assert.ok(sent[0]!.headers.get("anthropic-version"));
        assert.equal(result.text, "The answer is 4.");
        assert.equal(result.reasoningText, "Let me add.");
        const signature = (result.reasoning[0]?.providerMetadata?.["anthropic"] as { signature?: string } | undefined)?.signature;
        assert.ok(signature !== undefined && signature.length > 0);
        assert.equal(result.finishReason, "stop");
        assert.ok(result.usage.inputTokens! > 0 && result.usage.outputTokens! > 0);
    });

    it("a two-step tool loop: the thinking block and tool_result go back, and the answer comes in text", async () => {
        const seen: string[] = [];
        grammars = [
            exactly("Need the tool.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lagos\"}}\n</tool_call>"),
            exactly("Sunny.\n</think>\n\nLagos: 31 °C.")
        ];
        const result = await generateText({
            model: anthropic("maple-preview"), prompt: "Weather in Lagos?", maxOutputTokens: 128, maxRetries: 0,
            tools: { get_weather: weatherTool(seen) }, stopWhen: stepCountIs(2), providerOptions: thinking
        });
        assert.deepEqual(sent.map((exchange) => exchange.status), [200, 200]);
        assert.deepEqual(seen, ["Lagos"]);
        assert.equal(result.steps[0]!.finishReason, "tool-calls");
        assert.equal(result.text, "Lagos: 31 °C.");
        assert.equal(result.reasoningText, "Sunny.");
        const [, assistant, toolTurn] = sent[1]!.body.messages;
        assert.deepEqual(assistant!.content.map((block) => block.type), ["thinking", "tool_use"]);
        assert.equal(assistant!.content[0]!["thinking"], "Need the tool.");
        assert.equal(toolTurn!.content[0]!.type, "tool_result");
        assert.ok((result.steps[1]!.usage.inputTokenDetails.cacheReadTokens ?? 0) > 0, "the first step's prompt was reused");
    });

    it("streamText: reasoning deltas, then text deltas, then finish", async () => {
        grammars = [exactly("Think.\n</think>\n\nStreamed answer.")];
        const result = streamText({
            model: anthropic("maple-preview"), prompt: "Hi", maxOutputTokens: 64, maxRetries: 0, providerOptions: thinking,
            onError: ({ error }) => { throw error; }
        });
        const order: string[] = [];
        for await (const part of result.fullStream) {
            if (part.type === "error") assert.fail(String(part.error));
            if ((part.type === "reasoning-delta" || part.type === "text-delta") && order.at(-1) !== part.type) order.push(part.type);
        }
        assert.equal(sent[0]!.body.stream, true);
        assert.deepEqual(order, ["reasoning-delta", "text-delta"]);
        assert.equal(await result.text, "Streamed answer.");
        assert.equal(await result.reasoningText, "Think.");
        assert.equal(await result.finishReason, "stop");
        assert.ok((await result.usage).outputTokens! > 0);
    });

    it("a 400 is an APICallError, not retryable, with Maple's message", async () => {
        const error = await generateText({
            model: anthropic("maple-preview"), maxRetries: 0,
            messages: [{ role: "user", content: [{ type: "file", data: new Uint8Array([137, 80, 78, 71]), mediaType: "image/png" }] }]
        }).then(() => assert.fail("an image should be refused"), (caught: unknown) => caught);
        assert.ok(APICallError.isInstance(error), String(error));
        assert.equal(error.statusCode, 400);
        assert.equal(error.isRetryable, false);
        assert.match(error.message, /text only/);
    });
});

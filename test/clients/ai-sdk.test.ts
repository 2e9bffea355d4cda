import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { APICallError, generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { exact } from "../helpers/grammar.js";

/**
 * The Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`) against a real Maple server: what
 * generateText / streamText surface. Maple's `grammar` field goes through the provider's extra
 * body mechanism: `providerOptions.maple` keys that the provider does not know itself are copied
 * into the request body as they are.
 */

const grammarOption = (text: string) => ({ maple: { grammar: exact(text) } });

const answerText = "Let me add.\n</think>\n\nThe answer is 4.";
const weatherCallText = "ok\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lagos\"}}\n</tool_call>";

interface WireMessage {
    role: string;
    content: unknown;
    reasoning_content?: string;
    tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
    tool_call_id?: string;
}
interface RecordedCall {
    body: { messages: WireMessage[]; grammar?: string; stream?: boolean; stream_options?: unknown; [key: string]: unknown };
    status: number;
}

describe("Vercel AI SDK client", () => {
    let server: TestServer;
    /** Every request the SDK made, with the status Maple answered. */
    let calls: RecordedCall[] = [];
    let maple: ReturnType<typeof createOpenAICompatible>;

    before(async () => {
        server = await startTestServer({ maxNewTokensLimit: 256, maxPromptTokens: 800 });
        const recordingFetch: typeof fetch = async (input, init) => {
            const response = await fetch(input, init);
            calls.push({ body: JSON.parse(String(init?.body)) as RecordedCall["body"], status: response.status });
            return response;
        };
        maple = createOpenAICompatible({ name: "maple", baseURL: `${server.url}/v1`, includeUsage: true, fetch: recordingFetch });
    });
    beforeEach(() => { calls = []; });
    after(async () => server.close());

    const weatherTool = (seen: { city: string }[]) => tool({
        description: "Current weather for a city",
        inputSchema: z.object({ city: z.string() }),
        execute: async ({ city }) => {
            seen.push({ city });
            return { city, temperature_c: 31, sky: "sunny" };
        }
    });

    it("generateText: text, reasoning and usage with reasoning tokens", async () => {
        const result = await generateText({
            model: maple.chatModel("maple-preview"), prompt: "What is 2+2?", maxOutputTokens: 64, maxRetries: 0,
            providerOptions: grammarOption(answerText)
        });
        assert.equal(calls[0]!.body.grammar, exact(answerText), "the grammar reached the request body");
        assert.equal(result.text, "The answer is 4.");
        assert.equal(result.reasoningText, "Let me add.");
        assert.deepEqual(result.reasoning.map((part) => [part.type, part.text]), [["reasoning", "Let me add."]]);
        assert.equal(result.finishReason, "stop");
        assert.equal(result.response.modelId, "maple-preview");

        const { usage } = result;
        assert.ok(usage.inputTokens! > 0);
        assert.ok(usage.outputTokens! > 0);
        assert.equal(usage.totalTokens, usage.inputTokens! + usage.outputTokens!);
        const reasoningTokens = usage.outputTokenDetails.reasoningTokens!;
        assert.ok(reasoningTokens > 0 && reasoningTokens < usage.outputTokens!);
        assert.equal(usage.outputTokenDetails.textTokens, usage.outputTokens! - reasoningTokens);
        assert.equal(typeof usage.inputTokenDetails.cacheReadTokens, "number");
    });

    it("streamText: reasoning deltas, then text deltas, then finish with usage", async () => {
        const result = streamText({
            model: maple.chatModel("maple-preview"), prompt: "What is 2+2?", maxOutputTokens: 64, maxRetries: 0,
            providerOptions: grammarOption(answerText),
            onError: ({ error }) => { throw error; }
        });
        const order: string[] = [];
        let text = "";
        let reasoning = "";
        let finish: { finishReason: string; totalUsage: { outputTokens: number | undefined } } | undefined;
        for await (const part of result.fullStream) {
            if (part.type === "error") assert.fail(`error part: ${String(part.error)}`);
            if (part.type === "text-delta") text += part.text;
            if (part.type === "reasoning-delta") reasoning += part.text;
            if (part.type === "text-delta" || part.type === "reasoning-delta") {
                if (order.at(-1) !== part.type) order.push(part.type);
            }
            if (part.type === "finish") finish = part;
        }
        assert.equal(calls[0]!.body.stream, true);
        assert.deepEqual(calls[0]!.body.stream_options, { include_usage: true });
        assert.deepEqual(order, ["reasoning-delta", "text-delta"]);
        assert.equal(reasoning, "Let me add.");
        assert.equal(text, "The answer is 4.");
        assert.equal(await result.text, "The answer is 4.");
        assert.equal(await result.reasoningText, "Let me add.");
        assert.equal(finish?.finishReason, "stop");
        assert.ok(finish.totalUsage.outputTokens! > 0, "the usage chunk reached the SDK");
        const usage = await result.usage;
        assert.ok(usage.outputTokenDetails.reasoningTokens! > 0);
    });

    it("a tool is called with the right input (one step)", async () => {
        const seen: { city: string }[] = [];
        const result = await generateText({
            model: maple.chatModel("maple-preview"), prompt: "Weather in Lagos?", maxOutputTokens: 128, maxRetries: 0,
            tools: { get_weather: weatherTool(seen) }, stopWhen: stepCountIs(1),
            providerOptions: grammarOption(weatherCallText)
        });
        const sentTools = calls[0]!.body.tools as { type: string; function: { name: string; parameters: unknown } }[];
        assert.equal(sentTools[0]!.function.name, "get_weather");
        assert.equal(result.finishReason, "tool-calls");
        assert.equal(result.reasoningText, "ok");
        assert.equal(result.text, "");
        assert.equal(result.toolCalls.length, 1);
        const [call] = result.toolCalls;
        assert.equal(call!.toolName, "get_weather");
        assert.deepEqual(call!.input, { city: "Lagos" });
        assert.match(call!.toolCallId, /^call_/);
        assert.deepEqual(seen, [{ city: "Lagos" }]);
        assert.deepEqual(result.toolResults.map((toolResult) => toolResult.output), [{ city: "Lagos", temperature_c: 31, sky: "sunny" }]);
        assert.equal(calls.length, 1);
    });

    it("a two-step tool loop: the assistant turn and tool result go back and the second request is accepted", async () => {
        const seen: { city: string }[] = [];
        const result = await generateText({
            model: maple.chatModel("maple-preview"), prompt: "Weather in Lagos?", maxOutputTokens: 128, maxRetries: 0,
            tools: { get_weather: weatherTool(seen) }, stopWhen: stepCountIs(2),
            prepareStep: ({ stepNumber }) => ({
                providerOptions: grammarOption(stepNumber === 0 ? weatherCallText : "It is sunny.\n</think>\n\nLagos: 31 °C and sunny.")
            })
        });
        assert.deepEqual(calls.map((call) => call.status), [200, 200]);
        assert.equal(result.steps.length, 2);
        assert.equal(result.text, "Lagos: 31 °C and sunny.");
        assert.equal(result.reasoningText, "It is sunny.");
        assert.equal(result.finishReason, "stop");
        assert.deepEqual(seen, [{ city: "Lagos" }]);

        // What the SDK sent back: the assistant turn with content null, reasoning_content and
        // tool_calls, then the tool message answering that call.
        const firstCallId = result.steps[0]!.toolCalls[0]!.toolCallId;
        const messages = calls[1]!.body.messages;
        assert.deepEqual(messages.map((message) => message.role), ["user", "assistant", "tool"]);
        const assistant = messages[1]!;
        assert.equal(assistant.content, null);
        assert.equal(assistant.reasoning_content, "ok");
        assert.equal(assistant.tool_calls!.length, 1);
        assert.equal(assistant.tool_calls![0]!.id, firstCallId);
        assert.equal(assistant.tool_calls![0]!.function.name, "get_weather");
        assert.deepEqual(JSON.parse(assistant.tool_calls![0]!.function.arguments), { city: "Lagos" });
        assert.equal(messages[2]!.tool_call_id, firstCallId);
        assert.deepEqual(JSON.parse(String(messages[2]!.content)), { city: "Lagos", temperature_c: 31, sky: "sunny" });
        assert.ok(result.steps[1]!.usage.inputTokens! > result.steps[0]!.usage.inputTokens!, "the earlier turns are in the second prompt");
    });

    it("streamText surfaces a streamed tool call with its parsed input", async () => {
        const seen: { city: string }[] = [];
        const result = streamText({
            model: maple.chatModel("maple-preview"), prompt: "Weather in Lagos?", maxOutputTokens: 128, maxRetries: 0,
            tools: { get_weather: weatherTool(seen) }, stopWhen: stepCountIs(1),
            providerOptions: grammarOption(weatherCallText),
            onError: ({ error }) => { throw error; }
        });
        const toolCalls = await result.toolCalls;
        assert.equal(toolCalls.length, 1);
        assert.equal(toolCalls[0]!.toolName, "get_weather");
        assert.deepEqual(toolCalls[0]!.input, { city: "Lagos" });
        assert.equal(await result.finishReason, "tool-calls");
        assert.equal(await result.reasoningText, "ok");
        assert.deepEqual(seen, [{ city: "Lagos" }]);
    });

    it("a 400 surfaces as APICallError with Maple's message", async () => {
        const error = await generateText({
            model: maple.chatModel("maple-preview"), prompt: "hi", maxRetries: 0, providerOptions: { maple: { n: 99 } }
        }).then(() => assert.fail("n: 99 (more than the slots) should be rejected"), (caught: unknown) => caught);
        assert.ok(APICallError.isInstance(error), `got ${String(error)}`);
        assert.equal(error.statusCode, 400);
        assert.equal(error.isRetryable, false);
        assert.match(error.message, /at most \d+ choices/);
    });
});

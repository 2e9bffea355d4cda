import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type AIMessageChunk } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { ChatOpenAI } from "@langchain/openai";
import { z } from "zod";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { exact } from "../helpers/grammar.js";

/**
 * LangChain's `ChatOpenAI` (`@langchain/openai` on `@langchain/core`) against a real Maple
 * server. Maple's `grammar` field is sent with `modelKwargs`, which LangChain merges into the
 * request body.
 */

const answerText = "Let me add.\n</think>\n\nThe answer is 4.";
const weatherCallText = "ok\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lagos\"}}\n</tool_call>";

const getWeather = tool(async ({ city }) => JSON.stringify({ city, temperature_c: 31 }), {
    name: "get_weather",
    description: "Current weather for a city",
    schema: z.object({ city: z.string() })
});

interface RecordedCall {
    body: { messages: { role: string; content: unknown; tool_calls?: unknown[]; tool_call_id?: string }[]; [key: string]: unknown };
    status: number;
}

describe("LangChain ChatOpenAI client", () => {
    let server: TestServer;
    let calls: RecordedCall[] = [];
    const recordingFetch: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        calls.push({ body: JSON.parse(String(init?.body)) as RecordedCall["body"], status: response.status });
        return response;
    };
    /** A model whose output is `text`, exactly. */
    const chat = (text: string, maxTokens = 64): ChatOpenAI => new ChatOpenAI({
        model: "maple-preview",
        apiKey: "unused",
        maxRetries: 0,
        maxTokens,
        configuration: { baseURL: `${server.url}/v1`, fetch: recordingFetch },
        modelKwargs: { grammar: exact(text) }
    });

    before(async () => {
        server = await startTestServer({ maxNewTokensLimit: 256, maxPromptTokens: 800 });
    });
    beforeEach(() => { calls = []; });
    after(async () => server.close());

    it("invoke: content, additional_kwargs.reasoning_content, usage_metadata with reasoning", async () => {
        const message = await chat(answerText).invoke("What is 2+2?");
        assert.equal(calls[0]!.body.grammar, exact(answerText), "modelKwargs reached the request body");
        assert.ok(AIMessage.isInstance(message));
        assert.equal(message.content, "The answer is 4.");
        assert.equal(message.additional_kwargs.reasoning_content, "Let me add.");
        assert.deepEqual(message.tool_calls, []);
        assert.equal(message.response_metadata.finish_reason, "stop");
        assert.match(message.id!, /^chatcmpl-/);

        const usage = message.usage_metadata!;
        assert.ok(usage.input_tokens > 0);
        assert.ok(usage.output_tokens > 0);
        assert.equal(usage.total_tokens, usage.input_tokens + usage.output_tokens);
        const reasoning = usage.output_token_details?.reasoning;
        assert.ok(reasoning !== undefined && reasoning > 0 && reasoning < usage.output_tokens);
        assert.equal(typeof usage.input_token_details?.cache_read, "number");
    });

    it("stream: chunks concatenate to the content, the reasoning and the usage", async () => {
        const stream = await chat(answerText).stream("What is 2+2?");
        let merged: AIMessageChunk | undefined;
        let chunks = 0;
        let contentBeforeReasoning = false;
        for await (const chunk of stream) {
            chunks += 1;
            if (chunk.additional_kwargs.reasoning_content && merged !== undefined && merged.content !== "") contentBeforeReasoning = true;
            merged = merged === undefined ? chunk : merged.concat(chunk);
        }
        assert.deepEqual(calls[0]!.body.stream_options, { include_usage: true });
        assert.ok(chunks > 2, "the answer arrived in several chunks");
        assert.equal(contentBeforeReasoning, false);
        assert.equal(merged!.content, "The answer is 4.");
        assert.equal(merged!.additional_kwargs.reasoning_content, "Let me add.");
        assert.equal(merged!.response_metadata.finish_reason, "stop");
        const usage = merged!.usage_metadata!;
        assert.ok(usage.output_tokens > 0, "the usage chunk reached LangChain");
        assert.equal(usage.total_tokens, usage.input_tokens + usage.output_tokens);
        assert.ok(usage.output_token_details!.reasoning! > 0);
    });

    it("bindTools + invoke: tool_calls with parsed args", async () => {
        const message = await chat(weatherCallText, 128).bindTools([getWeather]).invoke("Weather in Lagos?");
        const sentTools = calls[0]!.body.tools as { type: string; function: { name: string } }[];
        assert.deepEqual(sentTools.map((sent) => [sent.type, sent.function.name]), [["function", "get_weather"]]);
        assert.equal(message.content, "");
        assert.equal(message.additional_kwargs.reasoning_content, "ok");
        assert.equal(message.response_metadata.finish_reason, "tool_calls");
        assert.deepEqual(message.invalid_tool_calls, []);
        assert.equal(message.tool_calls!.length, 1);
        const [call] = message.tool_calls!;
        assert.equal(call!.name, "get_weather");
        assert.deepEqual(call!.args, { city: "Lagos" });
        assert.match(call!.id!, /^call_/);
        assert.equal(call!.type, "tool_call");
    });

    it("bindTools + stream: tool call chunks merge into a parsed tool call", async () => {
        const stream = await chat(weatherCallText, 128).bindTools([getWeather]).stream("Weather in Lagos?");
        let merged: AIMessageChunk | undefined;
        for await (const chunk of stream) merged = merged === undefined ? chunk : merged.concat(chunk);
        assert.equal(merged!.tool_calls!.length, 1);
        assert.equal(merged!.tool_calls![0]!.name, "get_weather");
        assert.deepEqual(merged!.tool_calls![0]!.args, { city: "Lagos" });
        assert.equal(merged!.response_metadata.finish_reason, "tool_calls");
    });

    it("a tool round trip (system, user, assistant tool call, tool result) is accepted", async () => {
        const first = await chat(weatherCallText, 128).bindTools([getWeather]).invoke([
            new SystemMessage("You are terse."), new HumanMessage("Weather in Lagos?")
        ]);
        const call = first.tool_calls![0]!;
        const result = await getWeather.invoke(call);
        assert.ok(ToolMessage.isInstance(result));
        const second = await chat("It is sunny.\n</think>\n\nLagos: 31 °C.").bindTools([getWeather]).invoke([
            new SystemMessage("You are terse."), new HumanMessage("Weather in Lagos?"), first, result
        ]);
        assert.deepEqual(calls.map((recorded) => recorded.status), [200, 200]);
        // How LangChain sends the turns back: the assistant turn carries tool_calls (with content ""
        // and no reasoning_content), the tool message answers its id.
        const sent = calls[1]!.body.messages;
        assert.deepEqual(sent.map((message) => message.role).slice(1), ["user", "assistant", "tool"]);
        assert.equal(sent[3]!.tool_call_id, call.id);
        assert.equal(second.content, "Lagos: 31 °C.");
        assert.equal(second.additional_kwargs.reasoning_content, "It is sunny.");
    });

    it("under a reasoning-model name (developer role, max_completion_tokens) a cut-off thought surfaces as finish_reason length", async () => {
        // LangChain treats o-series / gpt-5 names as reasoning models: system → developer,
        // maxTokens → max_completion_tokens. Maple echoes any model name unless MAPLE_STRICT_MODEL.
        const model = new ChatOpenAI({
            model: "o4-mini", apiKey: "unused", maxRetries: 0, maxTokens: 4,
            configuration: { baseURL: `${server.url}/v1`, fetch: recordingFetch },
            modelKwargs: { grammar: exact(answerText) }
        });
        const message = await model.invoke([new SystemMessage("You are terse."), new HumanMessage("What is 2+2?")]);
        const body = calls[0]!.body;
        assert.deepEqual(body.messages.map((sent) => sent.role), ["developer", "user"]);
        assert.equal(body.max_completion_tokens, 4);
        assert.equal(body.max_tokens, undefined);
        assert.equal(message.response_metadata.finish_reason, "length");
        assert.equal(message.response_metadata.model_name, "o4-mini");
        assert.equal(message.content, "");
        const reasoning = message.additional_kwargs.reasoning_content;
        assert.ok(typeof reasoning === "string" && reasoning !== "" && "Let me add.".startsWith(reasoning), `got ${JSON.stringify(reasoning)}`);
        assert.equal(message.usage_metadata!.output_tokens, 4);
    });

    it("a 400 rejects the invoke with the status and Maple's message", async () => {
        const model = new ChatOpenAI({
            model: "maple-preview", apiKey: "unused", maxRetries: 0, n: 99,
            configuration: { baseURL: `${server.url}/v1` }
        });
        const error = await model.invoke("hi").then(() => assert.fail("n: 99 (more than the slots) should be rejected"), (caught: unknown) => caught);
        assert.ok(error instanceof Error);
        assert.equal((error as Error & { status?: number }).status, 400);
        assert.match(error.message, /at most \d+ choices/);
    });
});

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import Anthropic, { AuthenticationError, BadRequestError, OverloadedError } from "@anthropic-ai/sdk";
import type { MessageCreateParamsNonStreaming, MessageParam, Tool } from "@anthropic-ai/sdk/resources/messages";
import { exact as exactly } from "../helpers/grammar.js";
import { startHeldStream } from "../helpers/longGeneration.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { waitForHealth } from "../helpers/waitFor.js";

/**
 * The official `@anthropic-ai/sdk` against a real Maple server. Maple's `grammar` field rides in
 * the request body (the SDK sends fields it does not know as they are) and makes the random-weight
 * model write exactly the thinking, text and tool calls each test expects.
 */

type WithGrammar<T> = T & { grammar?: string };
const weatherTool: Tool = {
    name: "get_weather", description: "Current weather for a city",
    input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
};

describe("@anthropic-ai/sdk client", () => {
    let server: TestServer;
    let client: Anthropic;
    /** Every HTTP answer the SDK received: its status and the retry count header it sent. */
    let exchanges: { status: number; retryCount: string | null }[] = [];

    before(async () => {
        server = await startTestServer({ parallel: 1, maxQueueDepth: 0, apiKey: "sk-ant-maple" });
        const recordingFetch: typeof fetch = async (input, init) => {
            const response = await fetch(input, init);
            exchanges.push({ status: response.status, retryCount: new Headers(init?.headers).get("x-stainless-retry-count") });
            return response;
        };
        client = new Anthropic({ baseURL: server.url, apiKey: "sk-ant-maple", maxRetries: 0, fetch: recordingFetch });
    });
    after(async () => server.close());

    const create = (params: WithGrammar<Omit<MessageCreateParamsNonStreaming, "model">>) =>
        client.messages.create({ model: "maple-preview", ...params } as MessageCreateParamsNonStreaming);

    it("messages.create: text and thinking blocks, stop reason and usage", async () => {
        const message = await create({
            max_tokens: 64, messages: [{ role: "user", content: "What is 2+2?" }],
            thinking: { type: "enabled", budget_tokens: 32 }, grammar: exactly("Let me add.\n</think>\n\nThe answer is 4.")
        });
        assert.equal(message.role, "assistant");
        assert.deepEqual(message.content.map((block) => block.type), ["thinking", "text"]);
        const [thinking, text] = message.content;
        assert.ok(thinking?.type === "thinking" && thinking.thinking === "Let me add." && thinking.signature.length > 0);
        assert.ok(text?.type === "text" && text.text === "The answer is 4.");
        assert.equal(message.stop_reason, "end_turn");
        assert.ok(message.usage.input_tokens > 0 && message.usage.output_tokens > 0);
    });

    it("a tool-use loop: tool_use, then the tool_result (with the thinking block sent back) answered in text", async () => {
        const messages: MessageParam[] = [{ role: "user", content: "Weather in Lagos?" }];
        const first = await create({
            max_tokens: 128, messages, tools: [weatherTool],
            grammar: exactly("I need the tool.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lagos\"}}\n</tool_call>")
        });
        assert.equal(first.stop_reason, "tool_use");
        const call = first.content.find((block) => block.type === "tool_use");
        assert.ok(call?.type === "tool_use");
        assert.equal(call.name, "get_weather");
        assert.deepEqual(call.input, { city: "Lagos" });
        messages.push({ role: "assistant", content: first.content });
        messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "31 °C, sunny" }] });
        const second = await create({ max_tokens: 64, messages, tools: [weatherTool], grammar: exactly("Got it.\n</think>\n\nLagos: 31 °C and sunny.") });
        assert.equal(second.stop_reason, "end_turn");
        const last = second.content.at(-1);
        assert.equal(last?.type === "text" ? last.text : undefined, "Lagos: 31 °C and sunny.");
        assert.ok(second.usage.input_tokens + (second.usage.cache_read_input_tokens ?? 0) > first.usage.input_tokens + (first.usage.cache_read_input_tokens ?? 0));
        assert.ok((second.usage.cache_read_input_tokens ?? 0) > 0, "the first turn's prompt was reused from the slot");
    });

    it("messages.stream: text, thinking and signature events, finalMessage() and finalText()", async () => {
        const stream = client.messages.stream({
            model: "maple-preview", max_tokens: 64, messages: [{ role: "user", content: "Hi" }],
            grammar: exactly("Greet back.\n</think>\n\nHello there!")
        } as Anthropic.MessageStreamParams);
        let text = "";
        let thinking = "";
        let signature = "";
        const blocks: string[] = [];
        stream.on("text", (delta) => { text += delta; });
        stream.on("thinking", (delta) => { thinking += delta; });
        stream.on("signature", (value) => { signature = value; });
        stream.on("contentBlock", (block) => blocks.push(block.type));
        const message = await stream.finalMessage();
        assert.equal(text, "Hello there!");
        assert.equal(thinking, "Greet back.");
        assert.ok(signature.length > 0);
        assert.deepEqual(blocks, ["thinking", "text"]);
        assert.deepEqual(message.content.map((block) => block.type), ["thinking", "text"]);
        assert.equal(message.stop_reason, "end_turn");
        assert.ok(message.usage.output_tokens > 0);
        assert.equal(await stream.finalText(), "Hello there!");
    });

    it("messages.stream with a tool call: inputJson and the parsed input", async () => {
        const stream = client.messages.stream({
            model: "maple-preview", max_tokens: 128, messages: [{ role: "user", content: "Weather?" }], tools: [weatherTool],
            grammar: exactly("ok\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Accra\"}}\n</tool_call>")
        } as Anthropic.MessageStreamParams);
        let json = "";
        stream.on("inputJson", (delta) => { json += delta; });
        const message = await stream.finalMessage();
        assert.deepEqual(JSON.parse(json), { city: "Accra" });
        const call = message.content.find((block) => block.type === "tool_use");
        assert.deepEqual(call?.type === "tool_use" ? call.input : undefined, { city: "Accra" });
        assert.equal(message.stop_reason, "tool_use");
    });

    it("messages.countTokens equals the input tokens of the same request", async () => {
        const params = { model: "maple-preview", system: "Be brief.", messages: [{ role: "user" as const, content: "Count me." }], tools: [weatherTool] };
        const { input_tokens: counted } = await client.messages.countTokens(params);
        const message = await create({ ...params, max_tokens: 8, grammar: exactly("a\n</think>\n\nb") });
        assert.equal(message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0), counted);
    });

    it("error classes: BadRequestError (400), AuthenticationError (401)", async () => {
        await assert.rejects(create({
            max_tokens: 8, messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }] }]
        }), (error: unknown) => error instanceof BadRequestError && error.status === 400 && /text only/.test(error.message)
            && (error.error as { error: { type: string } }).error.type === "invalid_request_error");
        const stranger = new Anthropic({ baseURL: server.url, apiKey: "sk-wrong", maxRetries: 0 });
        await assert.rejects(stranger.messages.create({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "x" }] }),
            (error: unknown) => error instanceof AuthenticationError && error.status === 401);
    });

    it("overload: OverloadedError (529) without retries; with retries, the SDK retries on Maple's answer and succeeds", async () => {
        // The held stream is a completions request: it needs the key too.
        const withKey = { ...server, request: (path: string, init?: RequestInit) => server.request(path, { ...init, headers: { ...init?.headers as object, "x-api-key": "sk-ant-maple" } }) };
        const held = await startHeldStream(withKey);
        try {
            await assert.rejects(create({ max_tokens: 8, messages: [{ role: "user", content: "x" }], grammar: exactly("a\n</think>\n\nb") }),
                (error: unknown) => error instanceof OverloadedError && error.status === 529 && error.headers.get("retry-after") === "5");
        } finally {
            held.abort();
        }
        await waitForHealth(server, (health) => health.active === 0, "the slot to be free");
        const again = await startHeldStream(withKey);
        exchanges = [];
        // The slot is freed once the SDK has seen its 529: its retry (after Maple's Retry-After) is served.
        const retrying = new Anthropic({
            baseURL: server.url, apiKey: "sk-ant-maple", maxRetries: 2,
            fetch: async (input, init) => {
                const response = await fetch(input, init);
                exchanges.push({ status: response.status, retryCount: new Headers(init?.headers).get("x-stainless-retry-count") });
                if (response.status === 529) again.abort();
                return response;
            }
        });
        const message = await retrying.messages.create({
            model: "maple-preview", max_tokens: 32, messages: [{ role: "user", content: "x" }], grammar: exactly("a\n</think>\n\nserved")
        } as MessageCreateParamsNonStreaming);
        assert.equal((message.content.at(-1) as { text: string }).text, "served");
        assert.deepEqual(exchanges, [{ status: 529, retryCount: "0" }, { status: 200, retryCount: "1" }]);
    });
});

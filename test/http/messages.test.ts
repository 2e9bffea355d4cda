import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { thinkingSignature } from "../../src/anthropic/thinkingSignature.js";
import { exact as exactly } from "../helpers/grammar.js";
import { readNamedEvents, type NamedEvent } from "../helpers/sse.js";
import { startHeldStream } from "../helpers/longGeneration.js";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";
import { readHealth } from "../helpers/waitFor.js";

/**
 * POST /v1/messages and /v1/messages/count_tokens over HTTP, on the random-weight maple-tiny whose
 * output the `grammar` field fixes (Maple's template opens the think block, so the grammar's text
 * starts inside it).
 */

interface Block { type: string; text?: string; thinking?: string; signature?: string; id?: string; name?: string; input?: unknown }
interface Message {
    id: string; type: string; role: string; model: string; content: Block[];
    stop_reason: string; stop_sequence: string | null;
    usage: { input_tokens: number; output_tokens: number; cache_read_input_tokens: number; cache_creation_input_tokens: number;
        output_tokens_details?: { thinking_tokens: number }; };
}
interface AnthropicError { type: string; error: { type: string; message: string } }

const user = (text: string) => [{ role: "user", content: text }];
const answer = "Let me add.\n</think>\n\nThe answer is 4.";
const weatherTool = { name: "get_weather", description: "Weather for a city", input_schema: { type: "object", properties: { city: { type: "string", maxLength: 12 } }, required: ["city"] } };
const timeTool = { name: "get_time", input_schema: { type: "object", properties: {} } };
const weatherCall = "ok\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lagos\"}}\n</tool_call>";

async function assertAnthropicError(response: Response, status: number, type: string): Promise<string> {
    assert.equal(response.status, status);
    assert.match(response.headers.get("content-type") ?? "", /application\/json/);
    const body = await response.json() as AnthropicError;
    assert.equal(body.type, "error");
    assert.equal(body.error.type, type);
    assert.ok(!("param" in body.error));
    return body.error.message;
}

describe("POST /v1/messages", () => {
    let server: TestServer;
    const messages = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
        server.post("/v1/messages", { model: "claude-test", max_tokens: 64, ...body }, { "anthropic-version": "2023-06-01", ...headers });

    before(async () => {
        server = await startTestServer({ parallel: 1, maxQueueDepth: 0, maxBodyBytes: 64 * 1024 });
    });
    after(async () => server.close());

    it("answers a message: thinking with a signature, then text; end_turn and usage", async () => {
        const response = await messages({ messages: user("What is 2+2?"), grammar: exactly(answer) });
        assert.equal(response.status, 200);
        assert.match(response.headers.get("content-type") ?? "", /application\/json/);
        const message = await response.json() as Message;
        assert.match(message.id, /^msg_/);
        assert.equal(message.type, "message");
        assert.equal(message.role, "assistant");
        assert.equal(message.model, "claude-test");
        assert.deepEqual(message.content.map((block) => block.type), ["thinking", "text"]);
        assert.equal(message.content[0]!.thinking, "Let me add.");
        assert.equal(message.content[0]!.signature, thinkingSignature("Let me add."));
        assert.equal(message.content[1]!.text, "The answer is 4.");
        assert.equal(message.stop_reason, "end_turn");
        assert.equal(message.stop_sequence, null);
        assert.ok(message.usage.input_tokens > 0);
        assert.ok(message.usage.output_tokens > 0);
        assert.equal(message.usage.cache_creation_input_tokens, 0);
        const thinkingTokens = message.usage.output_tokens_details!.thinking_tokens;
        assert.ok(thinkingTokens > 0 && thinkingTokens < message.usage.output_tokens);
    });

    it("streams the same message: message_start, ping, blocks with their indices, message_delta, message_stop", async () => {
        const response = await messages({ messages: user("What is 2+2?"), grammar: exactly(answer), stream: true });
        assert.equal(response.status, 200);
        assert.match(response.headers.get("content-type") ?? "", /text\/event-stream/);
        const events = await readNamedEvents(response);
        for (const { event, data } of events) assert.equal(data["type"], event);
        const names = events.map((event) => event.event);
        assert.deepEqual(names.slice(0, 2), ["message_start", "ping"]);
        assert.deepEqual(names.slice(-2), ["message_delta", "message_stop"]);
        const blocks = events.filter((event) => event.event.startsWith("content_block"));
        const starts = blocks.filter((event) => event.event === "content_block_start");
        assert.deepEqual(starts.map((event) => [event.data["index"], (event.data["content_block"] as Block).type]), [[0, "thinking"], [1, "text"]]);
        const deltas = (index: number, type: string) => blocks
            .filter((event) => event.event === "content_block_delta" && event.data["index"] === index)
            .map((event) => event.data["delta"] as Record<string, string>).filter((delta) => delta["type"] === type);
        assert.equal(deltas(0, "thinking_delta").map((delta) => delta["thinking"]).join(""), "Let me add.");
        assert.deepEqual(deltas(0, "signature_delta").map((delta) => delta["signature"]), [thinkingSignature("Let me add.")]);
        assert.equal(deltas(1, "text_delta").map((delta) => delta["text"]).join(""), "The answer is 4.");
        const stops = blocks.filter((event) => event.event === "content_block_stop").map((event) => event.data["index"]);
        assert.deepEqual(stops, [0, 1]);
        const delta = events.at(-2)!.data as { delta: { stop_reason: string }; usage: { output_tokens: number; input_tokens: number } };
        assert.equal(delta.delta.stop_reason, "end_turn");
        assert.ok(delta.usage.output_tokens > 0);
        const start = events[0]!.data["message"] as Message;
        assert.equal(start.usage.input_tokens + start.usage.cache_read_input_tokens, delta.usage.input_tokens + (delta.usage as Message["usage"]).cache_read_input_tokens);
    });

    it("a tool call becomes a tool_use block (toolu_ id, input object) with stop_reason tool_use", async () => {
        // The random model picks its own split of the grammar's text into tokens: this call took
        // 41-64 tokens in 60 runs, so 64 (the suite's default) cut it now and then.
        const message = await (await messages({ messages: user("Weather in Lagos?"), tools: [weatherTool], max_tokens: 256, grammar: exactly(weatherCall) })).json() as Message;
        assert.deepEqual(message.content.map((block) => block.type), ["thinking", "tool_use"]);
        const call = message.content[1]!;
        assert.match(call.id!, /^toolu_/);
        assert.equal(call.name, "get_weather");
        assert.deepEqual(call.input, { city: "Lagos" });
        assert.equal(message.stop_reason, "tool_use");
    });

    it("tool_choice any / tool / disable_parallel_tool_use are enforced by grammar; none hides the tools", async () => {
        const noThinking = { thinking: { type: "disabled" }, tools: [weatherTool, timeTool], messages: user("Anything.") };
        // One call, so the random model cannot chain parallel calls until max_tokens (a single call
        // here is at most ~60 tokens: a 12-character city, or none).
        const any = await (await messages({ ...noThinking, tool_choice: { type: "any", disable_parallel_tool_use: true }, max_tokens: 128 })).json() as Message;
        assert.equal(any.stop_reason, "tool_use", JSON.stringify(any));
        assert.equal(any.content.length, 1, JSON.stringify(any.content));
        assert.ok(any.content.every((block) => block.type === "tool_use" && ["get_weather", "get_time"].includes(block.name!)), JSON.stringify(any.content));
        const named = await (await messages({ ...noThinking, tool_choice: { type: "tool", name: "get_weather", disable_parallel_tool_use: true }, max_tokens: 128 })).json() as Message;
        assert.equal(named.stop_reason, "tool_use");
        assert.equal(named.content.length, 1);
        assert.equal(named.content[0]!.name, "get_weather");
        assert.equal(typeof (named.content[0]!.input as { city: unknown }).city, "string");
        const none = await (await messages({ ...noThinking, tool_choice: { type: "none" }, max_tokens: 8, grammar: exactly(weatherCall.split("</think>\n\n")[1]!) })).json() as Message;
        assert.deepEqual(none.content.map((block) => block.type), ["text"], "without tools a <tool_call> block is plain text");
    });

    it("output_config.format: the answer is JSON of the schema, enforced by grammar", async () => {
        const schema = { type: "object", properties: { city: { type: "string", maxLength: 8 }, sunny: { type: "boolean" } }, required: ["city", "sunny"], additionalProperties: false };
        const message = await (await messages({ messages: user("JSON please."), thinking: { type: "disabled" }, max_tokens: 128, output_config: { format: { type: "json_schema", schema } } })).json() as Message;
        const parsed = JSON.parse(message.content.at(-1)!.text!) as { city: unknown; sunny: unknown };
        assert.deepEqual(Object.keys(parsed), ["city", "sunny"]);
        assert.equal(typeof parsed.sunny, "boolean");
        await assertAnthropicError(await messages({ messages: user("x"), output_config: { format: { type: "json_schema", schema: { type: "string", pattern: "a+" } } } }), 400, "invalid_request_error");
    });

    it("stop_sequences: stop_reason stop_sequence with the sequence that matched", async () => {
        const message = await (await messages({ messages: user("Count"), stop_sequences: ["never", "STOP"], grammar: exactly("ok\n</think>\n\none two STOP three") })).json() as Message;
        assert.equal(message.stop_reason, "stop_sequence");
        assert.equal(message.stop_sequence, "STOP");
        assert.equal(message.content.at(-1)!.text, "one two ");
    });

    it("max_tokens: stop_reason max_tokens", async () => {
        const message = await (await messages({ messages: user("Count"), max_tokens: 3, grammar: exactly(answer) })).json() as Message;
        assert.equal(message.stop_reason, "max_tokens");
        assert.equal(message.usage.output_tokens, 3);
    });

    it("thinking.budget_tokens closes the thought once it is spent; the answer follows", async () => {
        const request = { messages: user("Think."), max_tokens: 40, ignore_eos: true, temperature: 0 };
        const free = await (await messages({ ...request, thinking: { type: "enabled", budget_tokens: 39 } })).json() as Message;
        assert.deepEqual(free.content.map((block) => block.type), ["thinking"], "a random model never closes its thought by itself");
        const budget = 6;
        const closed = await (await messages({ ...request, thinking: { type: "enabled", budget_tokens: budget } })).json() as Message;
        assert.deepEqual(closed.content.map((block) => block.type), ["thinking", "text"]);
        const thinkingTokens = closed.usage.output_tokens_details!.thinking_tokens;
        // The budget, then the tokens that write the forced "</think>".
        assert.ok(thinkingTokens > budget && thinkingTokens <= budget + 6, `thinking tokens: ${thinkingTokens}`);
        assert.equal(closed.stop_reason, "max_tokens");
    });

    it("thinking sent back is the reasoning of that turn: omitted text is restored from its signature", async () => {
        const turn = (thinking: Record<string, string>) => ({
            model: "m", tools: [weatherTool], messages: [
                ...user("Weather in Lagos?"),
                { role: "assistant", content: [{ type: "thinking", ...thinking }, { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Lagos" } }] },
                { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "31 C", cache_control: { type: "ephemeral" } }] }
            ]
        });
        const count = async (body: unknown) => ((await (await server.post("/v1/messages/count_tokens", body)).json()) as { input_tokens: number }).input_tokens;
        const thought = "I should call the weather tool for Lagos.";
        const shown = await count(turn({ thinking: thought, signature: thinkingSignature(thought) }));
        const omitted = await count(turn({ thinking: "", signature: thinkingSignature(thought) }));
        const lost = await count(turn({ thinking: "", signature: "not-maple" }));
        const redacted = await count({ ...turn({ thinking: "" }), messages: turn({ thinking: "" }).messages.map((message, index) => index !== 1 ? message
            : { ...message, content: [{ type: "redacted_thinking", data: thinkingSignature(thought) }, ...(message.content as object[]).slice(1)] }) });
        assert.equal(omitted, shown);
        assert.equal(redacted, shown);
        assert.ok(lost < shown, "without its text the turn is shorter");
        const next = await messages({ ...turn({ thinking: "", signature: thinkingSignature(thought) }), grammar: exactly("ok\n</think>\n\n31 C in Lagos.") });
        assert.equal(next.status, 200);
        assert.equal(((await next.json()) as Message).content.at(-1)!.text, "31 C in Lagos.");
    });

    it("count_tokens is the input the same request uses; a repeated prompt is read from the slot's cache", async () => {
        const body = { system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }], messages: user("Cache me."), tools: [weatherTool] };
        const { input_tokens: counted } = await (await server.post("/v1/messages/count_tokens", { model: "m", ...body })).json() as { input_tokens: number };
        const first = await (await messages({ ...body, grammar: exactly("a\n</think>\n\nb") })).json() as Message;
        const second = await (await messages({ ...body, grammar: exactly("a\n</think>\n\nb") })).json() as Message;
        assert.equal(first.usage.input_tokens + first.usage.cache_read_input_tokens, counted);
        assert.equal(second.usage.input_tokens + second.usage.cache_read_input_tokens, counted);
        assert.ok(second.usage.cache_read_input_tokens >= counted - 1, `cache read: ${second.usage.cache_read_input_tokens} of ${counted}`);
    });

    it("refuses images and documents, a missing max_tokens, and Anthropic's server tools with 400 invalid_request_error", async () => {
        const image = { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } };
        const message = await assertAnthropicError(await messages({ messages: [{ role: "user", content: [{ type: "text", text: "What is this?" }, image] }] }), 400, "invalid_request_error");
        assert.match(message, /messages\[0\]\.content\[1\]\.type.*'image'.*text only/);
        await assertAnthropicError(await messages({ messages: [{ role: "user", content: [{ type: "document", source: { type: "text", data: "x" } }] }] }), 400, "invalid_request_error");
        assert.match(await assertAnthropicError(await server.post("/v1/messages", { model: "m", messages: user("x") }), 400, "invalid_request_error"), /max_tokens/);
        await assertAnthropicError(await messages({ messages: user("x"), tools: [{ type: "web_search_20250305", name: "web_search" }] }), 400, "invalid_request_error");
        await assertAnthropicError(await server.post("/v1/messages/count_tokens", { model: "m", messages: [{ role: "user", content: [image] }] }), 400, "invalid_request_error");
        await assertAnthropicError(await messages({ messages: user("x".repeat(70 * 1024)) }), 413, "request_too_large");
    });

    it("OpenAI's routes keep OpenAI's error shape", async () => {
        const response = await server.post("/v1/chat/completions", { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }] });
        assert.equal(response.status, 400);
        const body = await response.json() as WireError;
        assert.equal(body.error.type, "invalid_request_error");
        assert.ok("param" in body.error);
    });

    it("the query string of Claude Code (?beta=true) and anthropic-beta headers are accepted", async () => {
        const response = await server.post("/v1/messages?beta=true", { model: "m", max_tokens: 8, messages: user("x"), grammar: exactly("a\n</think>\n\nb") },
            { "anthropic-version": "2023-06-01", "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14" });
        assert.equal(response.status, 200);
    });

    it("an engine error after the stream began: an error event in Anthropic's shape, and the slot is freed", async () => {
        const response = await messages({ messages: user("x"), stream: true, max_tokens: 4, grammar: "root ::= \"a\"", logit_bias: { 64: -100 } });
        assert.equal(response.status, 200);
        const events = await readNamedEvents(response);
        assert.equal(events[0]!.event, "message_start");
        const last = events.at(-1) as NamedEvent;
        assert.equal(last.event, "error");
        assert.deepEqual(Object.keys(last.data), ["type", "error"]);
        assert.equal((last.data["error"] as { type: string }).type, "api_error");
        assert.equal((await readHealth(server)).active, 0);
    });

    it("overloaded: 529 overloaded_error with Retry-After, before any stream starts", async () => {
        const held = await startHeldStream(server);
        try {
            const refused = await messages({ messages: user("x"), grammar: exactly("a\n</think>\n\nb") });
            assert.equal(refused.headers.get("retry-after"), "5");
            await assertAnthropicError(refused, 529, "overloaded_error");
            const streamed = await messages({ messages: user("x"), stream: true, grammar: exactly("a\n</think>\n\nb") });
            await assertAnthropicError(streamed, 529, "overloaded_error");
        } finally {
            held.abort();
        }
    });
});

describe("/v1/messages with an API key and a strict model", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ parallel: 1, apiKey: "sk-maple-test", strictModel: true, modelId: "maple-preview" });
    });
    after(async () => server.close());

    const body = { model: "maple-preview", max_tokens: 8, messages: user("x"), grammar: exactly("a\n</think>\n\nb") };

    it("takes the key as x-api-key or as a bearer token; a missing or wrong key is 401 authentication_error", async () => {
        assert.equal((await server.post("/v1/messages", body, { "x-api-key": "sk-maple-test" })).status, 200);
        assert.equal((await server.post("/v1/messages", body, { authorization: "Bearer sk-maple-test" })).status, 200);
        assert.equal((await server.post("/v1/messages/count_tokens", body, { "x-api-key": "sk-maple-test" })).status, 200);
        await assertAnthropicError(await server.post("/v1/messages", body), 401, "authentication_error");
        await assertAnthropicError(await server.post("/v1/messages", body, { "x-api-key": "sk-wrong" }), 401, "authentication_error");
        await assertAnthropicError(await server.post("/v1/messages/count_tokens", body, { "x-api-key": "sk-wrong" }), 401, "authentication_error");
        assert.equal((await server.post("/v1/chat/completions", { messages: user("x"), max_tokens: 2 }, { "x-api-key": "sk-maple-test" })).status, 200,
            "the key header works on every route");
    });

    it("another model under MAPLE_STRICT_MODEL is 404 not_found_error", async () => {
        await assertAnthropicError(await server.post("/v1/messages", { ...body, model: "claude-opus" }, { "x-api-key": "sk-maple-test" }), 404, "not_found_error");
    });
});

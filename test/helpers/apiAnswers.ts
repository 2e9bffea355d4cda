import assert from "node:assert/strict";
import { parseSse, sseData } from "./sse.js";
import type { TestServer } from "./testServer.js";

/**
 * One chat turn asked of any of Maple's four chat APIs (chat completions, Responses, Messages,
 * Ollama's /api/chat), streamed or not, and its answer read back into one shape, so a test can
 * hold every API to the same expectation.
 */

export type ChatApi = "chat" | "responses" | "messages" | "ollama";
export const chatApis: readonly ChatApi[] = ["chat", "responses", "messages", "ollama"];

/** What a test asks: one user message, tools (the OpenAI function shape), and Maple's extras. */
export interface Turn {
    user: string;
    tools?: readonly { name: string; description?: string; parameters: Record<string, unknown> }[];
    /** Maple's `grammar` (GBNF over the whole output): the random-weight model writes exactly this. */
    grammar?: string;
    maxTokens?: number;
    /** More fields, added to the body as they are (each API's own names). */
    extra?: Record<string, unknown>;
}

/** An answer in one shape, whatever the API. */
export interface Answer {
    reasoning: string;
    content: string;
    calls: { name: string; arguments: unknown }[];
    /** Every streamed text or reasoning delta (empty for a whole response): none may hold a marker. */
    deltas: string[];
    /** The API's own end reason (`tool_calls`, `tool_use`, `completed`, `stop`, …). */
    finish: string;
}

export async function ask(server: TestServer, api: ChatApi, turn: Turn, stream: boolean): Promise<Answer> {
    const response = await server.post(...request(api, turn, stream));
    assert.equal(response.status, 200, await response.clone().text());
    const text = await response.text();
    switch (api) {
        case "chat": return stream ? chatStream(text) : chatWhole(JSON.parse(text) as ChatWhole);
        case "responses": return stream ? responsesStream(text) : responsesWhole(JSON.parse(text) as ResponseObject);
        case "messages": return stream ? messagesStream(text) : messagesWhole(JSON.parse(text) as MessageObject);
        case "ollama": return ollamaAnswer(text.trimEnd().split("\n").map((line) => JSON.parse(line) as OllamaLine));
    }
}

function request(api: ChatApi, turn: Turn, stream: boolean): [string, Record<string, unknown>, Record<string, string>?] {
    const tools = turn.tools ?? [];
    const grammar = turn.grammar === undefined ? {} : { grammar: turn.grammar };
    const maxTokens = turn.maxTokens ?? 200;
    const messages = [{ role: "user", content: turn.user }];
    switch (api) {
        case "chat":
            return ["/v1/chat/completions", {
                messages, max_tokens: maxTokens, stream, ...grammar, ...turn.extra,
                ...(tools.length > 0 ? { tools: tools.map((tool) => ({ type: "function", function: tool })) } : {})
            }];
        case "responses":
            return ["/v1/responses", {
                input: turn.user, max_output_tokens: maxTokens, stream, store: false, ...grammar, ...turn.extra,
                ...(tools.length > 0 ? { tools: tools.map((tool) => ({ type: "function", ...tool })) } : {})
            }];
        case "messages":
            return ["/v1/messages", {
                model: "claude-test", messages, max_tokens: maxTokens, stream, ...grammar, ...turn.extra,
                ...(tools.length > 0 ? { tools: tools.map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.parameters })) } : {})
            }, { "anthropic-version": "2023-06-01" }];
        case "ollama":
            return ["/api/chat", {
                model: "maple-preview", messages, stream, options: { num_predict: maxTokens }, ...grammar, ...turn.extra,
                ...(tools.length > 0 ? { tools: tools.map((tool) => ({ type: "function", function: tool })) } : {})
            }];
    }
}

interface ChatToolCall { index?: number; function: { name?: string; arguments?: string } }
interface ChatWhole { choices: { message: { content: string | null; reasoning_content?: string | null; tool_calls?: ChatToolCall[] }; finish_reason: string }[] }
interface ChatChunk { choices: { delta: { content?: string | null; reasoning_content?: string | null; tool_calls?: ChatToolCall[] }; finish_reason: string | null }[] }

function chatWhole(body: ChatWhole): Answer {
    const choice = body.choices[0]!;
    return {
        reasoning: choice.message.reasoning_content ?? "", content: choice.message.content ?? "", deltas: [], finish: choice.finish_reason,
        calls: (choice.message.tool_calls ?? []).map((call) => ({ name: call.function.name!, arguments: JSON.parse(call.function.arguments!) as unknown }))
    };
}

function chatStream(text: string): Answer {
    const answer = emptyAnswer();
    const calls: { name: string; arguments: string }[] = [];
    for (const data of sseData(text)) {
        if (data === "[DONE]") continue;
        const choice = (data as ChatChunk).choices[0];
        if (choice === undefined) continue;
        const { content, reasoning_content: reasoning, tool_calls: toolCalls } = choice.delta;
        if (typeof content === "string" && content !== "") addDelta(answer, "content", content);
        if (typeof reasoning === "string" && reasoning !== "") addDelta(answer, "reasoning", reasoning);
        for (const call of toolCalls ?? []) {
            const at = call.index ?? calls.length;
            calls[at] ??= { name: "", arguments: "" };
            calls[at].name += call.function.name ?? "";
            calls[at].arguments += call.function.arguments ?? "";
        }
        if (choice.finish_reason !== null) answer.finish = choice.finish_reason;
    }
    answer.calls = calls.map((call) => ({ name: call.name, arguments: JSON.parse(call.arguments) as unknown }));
    return answer;
}

interface ResponseItem { type: string; name?: string; arguments?: string; content?: { text: string }[] }
interface ResponseObject { status: string; output: ResponseItem[] }

function responsesWhole(body: ResponseObject): Answer {
    const answer = emptyAnswer();
    answer.finish = body.status;
    for (const item of body.output) {
        if (item.type === "reasoning") answer.reasoning += (item.content ?? []).map((part) => part.text).join("");
        else if (item.type === "message") answer.content += (item.content ?? []).map((part) => part.text).join("");
        else if (item.type === "function_call") answer.calls.push({ name: item.name!, arguments: JSON.parse(item.arguments!) as unknown });
    }
    return answer;
}

function responsesStream(text: string): Answer {
    const deltas: string[] = [];
    let completed: ResponseObject | undefined;
    for (const { data } of parseSse(text)) {
        const event = JSON.parse(data) as { type: string; delta?: string; response?: ResponseObject };
        if (event.type === "response.output_text.delta" || event.type === "response.reasoning_text.delta") deltas.push(event.delta!);
        if (event.type === "response.completed" || event.type === "response.incomplete") completed = event.response;
    }
    assert.ok(completed !== undefined, "the stream ends with the whole response");
    return { ...responsesWhole(completed), deltas };
}

type Block = { type: "text"; text: string } | { type: "thinking"; thinking: string } | { type: "tool_use"; name: string; input: unknown };
interface MessageObject { content: Block[]; stop_reason: string }

function messagesWhole(body: MessageObject): Answer {
    const answer = emptyAnswer();
    answer.finish = body.stop_reason;
    for (const block of body.content) {
        if (block.type === "thinking") answer.reasoning += block.thinking;
        else if (block.type === "text") answer.content += block.text;
        else if (block.type === "tool_use") answer.calls.push({ name: block.name, arguments: block.input });
    }
    return answer;
}

function messagesStream(text: string): Answer {
    const answer = emptyAnswer();
    const calls = new Map<number, { name: string; json: string }>();
    for (const { data } of parseSse(text)) {
        const event = JSON.parse(data) as {
            type: string; index?: number; content_block?: { type: string; name?: string };
            delta?: { type: string; text?: string; thinking?: string; partial_json?: string; stop_reason?: string };
        };
        if (event.type === "content_block_start" && event.content_block?.type === "tool_use") calls.set(event.index!, { name: event.content_block.name!, json: "" });
        if (event.type === "content_block_delta") {
            const delta = event.delta!;
            if (delta.type === "text_delta") addDelta(answer, "content", delta.text!);
            if (delta.type === "thinking_delta") addDelta(answer, "reasoning", delta.thinking!);
            if (delta.type === "input_json_delta") calls.get(event.index!)!.json += delta.partial_json;
        }
        if (event.type === "message_delta" && event.delta?.stop_reason !== undefined) answer.finish = event.delta.stop_reason;
    }
    answer.calls = [...calls.values()].map((call) => ({ name: call.name, arguments: JSON.parse(call.json) as unknown }));
    return answer;
}

interface OllamaLine { done: boolean; done_reason?: string; message: { content: string; thinking?: string; tool_calls?: { function: { name: string; arguments: unknown } }[] } }

function ollamaAnswer(lines: readonly OllamaLine[]): Answer {
    const answer = emptyAnswer();
    const streamed = lines.length > 1;
    for (const line of lines) {
        if (line.message.content !== "") (streamed ? addDelta : addText)(answer, "content", line.message.content);
        if (line.message.thinking !== undefined && line.message.thinking !== "") (streamed ? addDelta : addText)(answer, "reasoning", line.message.thinking);
        for (const call of line.message.tool_calls ?? []) answer.calls.push({ name: call.function.name, arguments: call.function.arguments });
        if (line.done) answer.finish = line.done_reason ?? "";
    }
    return answer;
}

function emptyAnswer(): Answer {
    return { reasoning: "", content: "", calls: [], deltas: [], finish: "" };
}

function addDelta(answer: Answer, kind: "content" | "reasoning", text: string): void {
    answer.deltas.push(text);
    addText(answer, kind, text);
}

function addText(answer: Answer, kind: "content" | "reasoning", text: string): void {
    answer[kind] += text;
}

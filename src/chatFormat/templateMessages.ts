import type { ChatMessage, ToolCall, ToolDefinition } from "./types.js";

/** A message as chat templates read it: the OpenAI / Transformers dict shape, snake_case keys. */
export type TemplateMessage = Record<string, unknown>;
/** A tool as chat templates read it: `{type: "function", function: {name, description, parameters}}`. */
export type TemplateTool = Record<string, unknown>;

/**
 * Converts internal messages to the dicts Jinja chat templates expect (what Transformers' and
 * vLLM's `apply_chat_template` pass).
 *
 * - `developer` becomes `system` unless the template itself mentions "developer": most templates
 *   (Qwen3's included) only know system, and would drop or mis-render the turn.
 * - An assistant `content` of null is passed as `""`: templates test it with string operations
 *   (Qwen3 does `'</think>' in message.content`, which fails on none). llama-server does the same
 *   for templates that need non-null content.
 * - Tool call arguments are passed parsed, as an object, since templates serialise them with
 *   `| tojson` (Qwen3) or iterate them; text that is not a JSON object is passed through as a string.
 * - `reasoning_content` and `tool_call_id` / `name` appear only when set, so `is defined` tests work.
 */
export function toTemplateMessages(messages: readonly ChatMessage[], templateKnowsDeveloper: boolean): TemplateMessage[] {
    return messages.map((message): TemplateMessage => {
        switch (message.role) {
            case "system":
            case "user":
                return { role: message.role, content: message.content };
            case "developer":
                return { role: templateKnowsDeveloper ? "developer" : "system", content: message.content };
            case "assistant": {
                const converted: TemplateMessage = { role: "assistant", content: message.content ?? "" };
                if (message.reasoningContent !== undefined) converted["reasoning_content"] = message.reasoningContent;
                if (message.toolCalls !== undefined && message.toolCalls.length > 0) {
                    converted["tool_calls"] = message.toolCalls.map(toTemplateToolCall);
                }
                return converted;
            }
            case "tool": {
                const converted: TemplateMessage = { role: "tool", content: message.content };
                if (message.toolCallId !== undefined) converted["tool_call_id"] = message.toolCallId;
                if (message.name !== undefined) converted["name"] = message.name;
                return converted;
            }
        }
    });
}

/** Converts tool definitions to the OpenAI `tools` shape templates render (often with `| tojson`). */
export function toTemplateTools(tools: readonly ToolDefinition[]): TemplateTool[] {
    return tools.map((tool) => {
        const fn: Record<string, unknown> = { name: tool.name };
        if (tool.description !== undefined) fn["description"] = tool.description;
        fn["parameters"] = tool.parameters;
        return { type: "function", function: fn };
    });
}

function toTemplateToolCall(call: ToolCall): Record<string, unknown> {
    return { id: call.id, type: "function", function: { name: call.name, arguments: parseArguments(call.arguments) } };
}

function parseArguments(text: string): unknown {
    if (text.trim() === "") return {};
    try {
        const parsed = JSON.parse(text) as unknown;
        if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) return parsed;
    } catch {
        // not JSON: the template gets the text as the model or client wrote it
    }
    return text;
}

/**
 * For templates that render one call per assistant turn (gpt-oss's, Llama 3.1's): a turn of several
 * calls becomes one turn per call, the first keeping the turn's content and reasoning, each
 * followed by its result (matched by `toolCallId`, else the next one without an id).
 */
export function oneCallPerTurn(messages: readonly ChatMessage[]): ChatMessage[] {
    const result: ChatMessage[] = [];
    for (let index = 0; index < messages.length; index++) {
        const message = messages[index]!;
        if (message.role !== "assistant" || message.toolCalls === undefined || message.toolCalls.length < 2) {
            result.push(message);
            continue;
        }
        const results: ChatMessage[] = [];
        while (messages[index + 1]?.role === "tool") results.push(messages[++index]!);
        message.toolCalls.forEach((call, callIndex) => {
            result.push(callIndex === 0 ? { ...message, toolCalls: [call] } : { role: "assistant", content: null, toolCalls: [call] });
            const answer = results.find((item) => item.role === "tool" && item.toolCallId === call.id) ?? results.find((item) => item.role === "tool" && item.toolCallId === undefined);
            if (answer !== undefined) {
                results.splice(results.indexOf(answer), 1);
                result.push(answer);
            }
        });
        result.push(...results);
    }
    return result;
}

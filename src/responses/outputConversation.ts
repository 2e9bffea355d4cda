import type { ChatMessage, ToolCall } from "../chat/types.js";

/**
 * A response's output items as the assistant turn a continuation (`previous_response_id`) renders:
 * its message text, its reasoning, and its tool calls by `call_id` (a custom tool's `input` as the
 * one-argument object the model wrote it as).
 */
export function assistantTurn(output: readonly Record<string, unknown>[]): ChatMessage {
    let content: string | null = null;
    const reasoning: string[] = [];
    const toolCalls: ToolCall[] = [];
    for (const item of output) {
        if (item["type"] === "message") {
            for (const part of item["content"] as Record<string, unknown>[]) {
                if (part["type"] === "output_text") content = (content ?? "") + String(part["text"]);
            }
        } else if (item["type"] === "reasoning") {
            for (const part of (item["content"] ?? []) as Record<string, unknown>[]) reasoning.push(String(part["text"]));
        } else if (item["type"] === "function_call") {
            toolCalls.push({ id: String(item["call_id"]), name: String(item["name"]), arguments: String(item["arguments"]) });
        } else if (item["type"] === "custom_tool_call") {
            toolCalls.push({ id: String(item["call_id"]), name: String(item["name"]), arguments: JSON.stringify({ input: item["input"] }) });
        }
    }
    return {
        role: "assistant", content,
        ...(reasoning.length > 0 ? { reasoningContent: reasoning.join("\n") } : {}),
        ...(toolCalls.length > 0 ? { toolCalls } : {})
    };
}

import type { ChatMessage, ToolCall } from "../chatFormat/types.js";
import type { SentOutputItem } from "./responseObject.js";

/**
 * A response's output items as the assistant turn a continuation (`previous_response_id`) renders:
 * its message text, its reasoning, and its tool calls by `call_id` (a custom tool's `input` as the
 * one-argument object the model wrote it as).
 */
export function assistantTurn(output: readonly SentOutputItem[]): ChatMessage {
    let content: string | null = null;
    const reasoning: string[] = [];
    const toolCalls: ToolCall[] = [];
    for (const item of output) {
        if (item.type === "message") {
            for (const part of item.content) content = (content ?? "") + part.text;
        } else if (item.type === "reasoning") {
            for (const part of item.content ?? []) reasoning.push(part.text);
        } else if (item.type === "function_call") {
            toolCalls.push({ id: item.call_id, name: item.name, arguments: item.arguments });
        } else {
            toolCalls.push({ id: item.call_id, name: item.name, arguments: JSON.stringify({ input: item.input }) });
        }
    }
    return {
        role: "assistant", content,
        ...(reasoning.length > 0 ? { reasoningContent: reasoning.join("\n") } : {}),
        ...(toolCalls.length > 0 ? { toolCalls } : {})
    };
}

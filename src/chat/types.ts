/** Internal (camelCase, validated) chat types: what the OpenAI wire format becomes past the route. */

export interface ToolCall {
    id: string;
    name: string;
    /** The arguments as the JSON text the model wrote (the wire form is this string). */
    arguments: string;
}

export type ChatMessage =
    | { role: "system"; content: string }
    | { role: "developer"; content: string }
    | { role: "user"; content: string }
    | { role: "assistant"; content: string | null; reasoningContent?: string; toolCalls?: ToolCall[] }
    | { role: "tool"; content: string; toolCallId?: string; name?: string };

export interface ToolDefinition {
    name: string;
    description?: string;
    /** JSON schema of the arguments object; `{type: "object", properties: {}}` when absent. */
    parameters: Record<string, unknown>;
}

/** One piece of parsed model output, in the order the model produced it. */
export type OutputPart =
    | { type: "reasoning"; text: string }
    | { type: "content"; text: string }
    | { type: "tool_call"; name: string; arguments: string };

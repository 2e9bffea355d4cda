/** Internal (camelCase, validated) chat types: what every wire format's conversation becomes past its route. */

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

/**
 * Which tools the model may or must call: none, its own choice, at least one (any offered), or
 * the named one. Every wire format's tool choice maps onto these four.
 */
export type ToolChoice = { type: "none" } | { type: "auto" } | { type: "required" } | { type: "function"; name: string };

/**
 * Whether the model should reason before it answers, and how hard: what every API's reasoning
 * field becomes (`reasoningSwitch` in the wire kit), and what the model's chat format turns into
 * its template's own variables. `effort` undefined: the template's default level.
 */
export type ReasoningSwitch = { enabled: false } | { enabled: true; effort: "low" | "medium" | "high" | undefined };

/** One piece of parsed model output, in the order the model produced it. */
export type OutputPart =
    | { type: "reasoning"; text: string }
    | { type: "content"; text: string }
    | { type: "tool_call"; name: string; arguments: string };

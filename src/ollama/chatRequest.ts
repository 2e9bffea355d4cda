import { z } from "zod";
import type { ChatMessage, ToolCall, ToolChoice, ToolDefinition } from "../chat/types.js";
import { answerConstraint, type ChatGenerationRequest } from "../conversation/index.js";
import { InvalidRequestError } from "../errors.js";
import { rejectUnsupported as refuse, type SamplingDefaults } from "../openai/sampling.js";
import { paramPath, parseWire } from "../openai/validation.js";
import { toGenerationSettings } from "./options.js";
import { checkGrammarConflict, generationFields, logprobsOf, parseFormat, streams, thinkingKwargs } from "./requestFields.js";

/** Ollama's tool-call arguments: an object (api.ToolCallFunctionArguments); a JSON string of one is accepted too. */
const wireToolCall = z.object({
    id: z.string().nullish(),
    function: z.object({
        index: z.number().int().nullish(),
        name: z.string().min(1),
        arguments: z.union([z.record(z.unknown()), z.string()]).nullish()
    }).passthrough()
}).passthrough();

const wireMessage = z.object({
    // Ollama lowercases the role (api.Message.UnmarshalJSON).
    role: z.string().transform((role) => role.toLowerCase()),
    content: z.string().nullish(),
    thinking: z.string().nullish(),
    images: z.array(z.unknown()).nullish(),
    tool_calls: z.array(wireToolCall).nullish(),
    tool_name: z.string().nullish(),
    tool_call_id: z.string().nullish()
}).passthrough();

const wireTool = z.object({
    type: z.string().nullish(),
    function: z.object({
        name: z.string().min(1).max(64),
        description: z.string().nullish(),
        parameters: z.record(z.unknown()).nullish()
    }).passthrough()
}).passthrough();

const chatWire = z.object({
    ...generationFields,
    messages: z.array(wireMessage).nullish(),
    tools: z.array(wireTool).nullish()
});

/** An /api/chat request past the edge: the core's request and what the route reads. */
export interface OllamaChatRequest extends ChatGenerationRequest {
    /** The name as the client sent it (Ollama echoes it). */
    model: string;
    stream: boolean;
    /** No messages: Ollama's "load the model" request, answered `done_reason: "load"` at once. */
    loadOnly: boolean;
}

export function parseOllamaChatRequest(body: unknown, defaults: SamplingDefaults): OllamaChatRequest {
    const wire = parseWire(chatWire, body);
    const offered = (wire.tools ?? []).map((tool, index): ToolDefinition => {
        if (tool.type != null && tool.type !== "function") refuse(`tools[${index}].type`, `Tools of type '${tool.type}' are not supported; use type "function".`);
        return {
            name: tool.function.name,
            ...(tool.function.description != null ? { description: tool.function.description } : {}),
            parameters: tool.function.parameters ?? { type: "object", properties: {} }
        };
    });
    checkToolNames(offered);
    // Ollama has no tool choice: the model decides whenever tools are offered.
    const toolChoice: ToolChoice = { type: offered.length > 0 ? "auto" : "none" };
    const json = parseFormat(wire.format);
    const answer = answerConstraint(json, toolChoice, offered, true, (index) => `tools[${index}].function.parameters`);
    checkGrammarConflict(wire.grammar, answer !== undefined);
    const messages = toChatMessages(wire.messages ?? []);
    return {
        model: wire.model,
        stream: streams(wire.stream),
        loadOnly: messages.length === 0,
        messages,
        tools: offered,
        toolChoice,
        answer,
        templateKwargs: thinkingKwargs(wire.think),
        includeReasoning: true,
        ...toGenerationSettings(wire.options, defaults),
        n: 1,
        logprobs: logprobsOf(wire),
        grammar: wire.grammar ?? undefined
    };
}

function checkToolNames(tools: readonly ToolDefinition[]): void {
    const names = new Set<string>();
    tools.forEach((tool, index) => {
        if (names.has(tool.name)) throw new InvalidRequestError(`Two tools are named '${tool.name}'.`, `tools[${index}].function.name`);
        names.add(tool.name);
    });
}

type WireMessage = z.infer<typeof wireMessage>;

/** Ollama's messages → the core's. A tool result names its call by `tool_call_id`, or its tool by `tool_name`. */
export function toChatMessages(messages: readonly WireMessage[]): ChatMessage[] {
    return messages.map((message, index): ChatMessage => {
        const at = (...path: (string | number)[]): string => paramPath(["messages", index, ...path]);
        if (message.images != null && message.images.length > 0) {
            refuse(at("images"), "Images are not supported: this model reads text only.");
        }
        const content = message.content ?? "";
        switch (message.role) {
            case "system":
            case "user":
                return { role: message.role, content };
            case "assistant": {
                const toolCalls = (message.tool_calls ?? []).map((call, callIndex) => toToolCall(call, at("tool_calls", callIndex), `call_${index}_${callIndex}`));
                return {
                    role: "assistant",
                    content,
                    ...(message.thinking != null && message.thinking !== "" ? { reasoningContent: message.thinking } : {}),
                    ...(toolCalls.length > 0 ? { toolCalls } : {})
                };
            }
            case "tool":
                return {
                    role: "tool", content,
                    ...(message.tool_call_id != null ? { toolCallId: message.tool_call_id } : {}),
                    ...(message.tool_name != null ? { name: message.tool_name } : {})
                };
            default:
                throw new InvalidRequestError(`role must be one of system, user, assistant, tool; got '${message.role}'.`, at("role"));
        }
    });
}

function toToolCall(call: z.infer<typeof wireToolCall>, param: string, fallbackId: string): ToolCall {
    const args = call.function.arguments ?? {};
    let text: string;
    if (typeof args === "string") {
        let value: unknown;
        try {
            value = JSON.parse(args === "" ? "{}" : args);
        } catch {
            value = undefined;
        }
        if (value === null || typeof value !== "object" || Array.isArray(value)) {
            throw new InvalidRequestError("Tool call arguments must be a JSON object.", `${param}.function.arguments`);
        }
        text = JSON.stringify(value);
    } else {
        text = JSON.stringify(args);
    }
    return { id: call.id ?? fallbackId, name: call.function.name, arguments: text };
}

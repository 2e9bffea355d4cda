import { z } from "zod";
import type { ChatMessage, ToolCall, ToolDefinition } from "../chatFormat/types.js";
import { answerConstraint, type ChatGenerationRequest } from "../core/index.js";
import { InvalidRequestError } from "../errors.js";
import { conversationKey, paramPath, parseWire, reasoningSwitch, refuseDuplicateToolNames, refuseGrammarWithAnswer, selectTools, toolCallArguments, type RequestHeaders, type SamplingDefaults } from "../wire/index.js";
import { toGenerationSettings } from "./options.js";
import { generationFields, logprobsOf, parseFormat, refuse, streams } from "./requestFields.js";

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

export function parseOllamaChatRequest(body: unknown, headers: RequestHeaders, defaults: SamplingDefaults): OllamaChatRequest {
    const wire = parseWire(chatWire, body);
    const offered = (wire.tools ?? []).map((tool, index): ToolDefinition => {
        if (tool.type != null && tool.type !== "function") refuse(`tools[${index}].type`, `Tools of type '${tool.type}' are not supported; use type "function".`);
        return {
            name: tool.function.name,
            ...(tool.function.description != null ? { description: tool.function.description } : {}),
            parameters: tool.function.parameters ?? { type: "object", properties: {} }
        };
    });
    refuseDuplicateToolNames(offered.map((tool) => tool.name), (index) => `tools[${index}].function.name`);
    // Ollama has no tool choice: the model decides whenever tools are offered.
    const { toolChoice, tools } = selectTools(offered, undefined, { param: "tools", nameParam: "tools", requiredWord: "required" });
    const json = parseFormat(wire.format);
    const answer = answerConstraint(json, toolChoice, tools, true, (index) => `tools[${index}].function.parameters`);
    refuseGrammarWithAnswer(answer, wire.grammar, "format");
    const messages = toChatMessages(wire.messages ?? []);
    return {
        model: wire.model,
        stream: streams(wire.stream),
        loadOnly: messages.length === 0,
        messages,
        tools,
        toolChoice,
        // Ollama has no such field: the model may call several.
        parallelToolCalls: true,
        answer,
        templateKwargs: {},
        reasoning: reasoningSwitch(wire.think),
        includeReasoning: true,
        ...toGenerationSettings(wire.options, defaults),
        n: 1,
        logprobs: logprobsOf(wire),
        grammar: wire.grammar ?? undefined,
        // Ollama's requests name no conversation: an X-Session-Id header is the one key they can carry.
        cacheKey: conversationKey({}, headers)
    };
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
    // Ollama sends an object; a JSON string of one (OpenAI's shape) is held to every format's rule.
    const args = call.function.arguments;
    const text = args != null && typeof args === "object" ? JSON.stringify(args) : toolCallArguments(args, `${param}.function.arguments`);
    return { id: call.id ?? fallbackId, name: call.function.name, arguments: text };
}

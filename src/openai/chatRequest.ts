import { z } from "zod";
import { InvalidRequestError } from "../errors.js";
import type { ChatMessage, ToolCall, ToolChoice, ToolDefinition } from "../chat/types.js";
import { answerConstraint } from "../conversation/answerConstraint.js";
import type { ChatGenerationRequest } from "../conversation/request.js";
import { parseResponseFormat } from "./responseFormat.js";
import { paramPath, parseWire } from "./validation.js";
import { resolveMaxTokens, samplingFields, toSamplingOptions, toStopList, type OpenAiRequestFields, type SamplingDefaults } from "./sampling.js";

const textPart = z.object({ type: z.literal("text"), text: z.string() }).passthrough();
/** Any content part; only `text` is served (a text-only model), the others are refused by name below. */
const contentPart = z.object({ type: z.string() }).passthrough();
const content = z.union([z.string(), z.array(contentPart)]);

const wireToolCall = z.object({
    id: z.string().optional(),
    type: z.literal("function").optional(),
    function: z.object({ name: z.string().min(1), arguments: z.string().nullish() }).passthrough()
}).passthrough();

const wireMessage = z.discriminatedUnion("role", [
    z.object({ role: z.literal("system"), content, name: z.string().optional() }).passthrough(),
    z.object({ role: z.literal("developer"), content, name: z.string().optional() }).passthrough(),
    z.object({ role: z.literal("user"), content, name: z.string().optional() }).passthrough(),
    z.object({
        role: z.literal("assistant"),
        content: content.nullish(),
        reasoning_content: z.string().nullish(),
        // The AI SDK's name for the same field.
        reasoning: z.string().nullish(),
        tool_calls: z.array(wireToolCall).nullish(),
        name: z.string().optional()
    }).passthrough(),
    z.object({ role: z.literal("tool"), content, tool_call_id: z.string().nullish(), name: z.string().optional() }).passthrough()
], { errorMap: (issue, context) => issue.code === "invalid_union_discriminator"
    ? { message: "role must be one of system, developer, user, assistant, tool" }
    : { message: context.defaultError } });

const wireTool = z.object({
    type: z.literal("function"),
    function: z.object({
        name: z.string().min(1).max(64),
        description: z.string().nullish(),
        parameters: z.record(z.unknown()).nullish(),
        strict: z.boolean().nullish()
    }).passthrough()
}).passthrough();

const wireToolChoice = z.union([
    z.enum(["none", "auto", "required"]),
    z.object({ type: z.literal("function"), function: z.object({ name: z.string() }).passthrough() }).passthrough()
]);

const chatWire = z.object({
    model: z.string().nullish(),
    messages: z.array(wireMessage).min(1, "messages must contain at least one message"),
    tools: z.array(wireTool).nullish(),
    tool_choice: wireToolChoice.nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    max_completion_tokens: z.number().int().min(1).nullish(),
    chat_template_kwargs: z.record(z.unknown()).nullish(),
    include_reasoning: z.boolean().nullish(),
    n: z.number().int().min(1).nullish(),
    logprobs: z.boolean().nullish(),
    top_logprobs: z.number().int().min(0).max(20).nullish(),
    response_format: z.object({ type: z.string() }).passthrough().nullish(),
    ...samplingFields
});

/** A /v1/chat/completions request past the edge: validated, defaults applied, camelCase; the core's request plus the wire's own fields. */
export interface ChatRequest extends ChatGenerationRequest, OpenAiRequestFields {}

export function parseChatRequest(body: unknown, defaults: SamplingDefaults): ChatRequest {
    const wire = parseWire(chatWire, body);
    if (wire.top_logprobs != null && wire.logprobs !== true) {
        throw new InvalidRequestError("top_logprobs needs logprobs set to true.", "top_logprobs");
    }
    const json = parseResponseFormat(wire.response_format);
    const offered = (wire.tools ?? []).map((tool): ToolDefinition => ({
        name: tool.function.name,
        ...(tool.function.description != null ? { description: tool.function.description } : {}),
        parameters: tool.function.parameters ?? { type: "object", properties: {} }
    }));
    const toolChoice = resolveToolChoice(wire.tool_choice, offered);
    const answer = answerConstraint(json, toolChoice, offered, wire.parallel_tool_calls !== false, (index) => `tools[${index}].function.parameters`);
    if (answer !== undefined && wire.grammar != null) {
        throw new InvalidRequestError("grammar cannot be combined with response_format or an enforced tool_choice: both constrain the output.", "grammar");
    }
    return {
        model: wire.model ?? undefined,
        messages: toChatMessages(wire.messages),
        tools: toolChoice.type === "none" ? [] : toolChoice.type === "function" ? offered.filter((tool) => tool.name === toolChoice.name) : offered,
        toolChoice,
        sampling: toSamplingOptions(wire, defaults),
        maxTokens: resolveMaxTokens(wire.max_completion_tokens ?? wire.max_tokens, defaults),
        stop: toStopList(wire.stop),
        stream: wire.stream === true,
        includeUsage: wire.stream_options?.include_usage === true,
        grammar: wire.grammar ?? undefined,
        templateKwargs: wire.chat_template_kwargs ?? {},
        includeReasoning: wire.include_reasoning !== false,
        n: wire.n ?? 1,
        logprobs: wire.logprobs === true ? { top: wire.top_logprobs ?? 0 } : undefined,
        answer
    };
}

function resolveToolChoice(choice: z.infer<typeof wireToolChoice> | null | undefined, offered: ToolDefinition[]): ToolChoice {
    if (choice == null) return { type: offered.length > 0 ? "auto" : "none" };
    if (typeof choice === "string") {
        if (choice === "required" && offered.length === 0) {
            throw new InvalidRequestError("tool_choice 'required' needs at least one tool in 'tools'.", "tool_choice");
        }
        return { type: choice };
    }
    const name = choice.function.name;
    if (!offered.some((tool) => tool.name === name)) {
        throw new InvalidRequestError(`tool_choice names '${name}', which is not one of the offered tools.`, "tool_choice");
    }
    return { type: "function", name };
}

type WireMessage = z.infer<typeof wireMessage>;

function toChatMessages(messages: WireMessage[]): ChatMessage[] {
    const callIds = new Set<string>();
    return messages.map((message, index): ChatMessage => {
        const at = (...path: (string | number)[]): string => paramPath(["messages", index, ...path]);
        switch (message.role) {
            case "system":
            case "developer":
            case "user":
                return { role: message.role, content: textOf(message.content, at("content")) };
            case "assistant": {
                const toolCalls = (message.tool_calls ?? []).map((call, callIndex): ToolCall => {
                    const args = call.function.arguments ?? "{}";
                    if (!isJsonObjectText(args)) {
                        throw new InvalidRequestError("Tool call arguments must be a JSON object encoded as a string.",
                            at("tool_calls", callIndex, "function", "arguments"));
                    }
                    const id = call.id ?? `call_${index}_${callIndex}`;
                    callIds.add(id);
                    return { id, name: call.function.name, arguments: args };
                });
                const reasoning = message.reasoning_content ?? message.reasoning ?? undefined;
                return {
                    role: "assistant",
                    content: message.content == null ? null : textOf(message.content, at("content")),
                    ...(reasoning !== undefined ? { reasoningContent: reasoning } : {}),
                    ...(toolCalls.length > 0 ? { toolCalls } : {})
                };
            }
            case "tool": {
                const id = message.tool_call_id ?? undefined;
                if (id !== undefined && !callIds.has(id)) {
                    throw new InvalidRequestError(`No earlier assistant tool call has the id '${id}'.`, at("tool_call_id"));
                }
                return {
                    role: "tool", content: textOf(message.content, at("content")),
                    ...(id !== undefined ? { toolCallId: id } : {}),
                    ...(message.name !== undefined ? { name: message.name } : {})
                };
            }
        }
    });
}

/** Joins `text` parts; any other part is refused by name: the model reads text only. */
function textOf(content: string | { type: string; [key: string]: unknown }[], param: string): string {
    if (typeof content === "string") return content;
    return content.map((part, index) => {
        const parsed = textPart.safeParse(part);
        if (!parsed.success) {
            throw new InvalidRequestError(
                part.type === "text" ? "A text part needs a string 'text'." : `Content parts of type '${part.type}' are not supported: this model reads text only.`,
                `${param}[${index}]${part.type === "text" ? ".text" : ".type"}`);
        }
        return parsed.data.text;
    }).join("");
}

function isJsonObjectText(text: string): boolean {
    if (text.trim() === "") return true;
    try {
        const value: unknown = JSON.parse(text);
        return value !== null && typeof value === "object" && !Array.isArray(value);
    } catch {
        return false;
    }
}

import { z } from "zod";
import { InvalidRequestError } from "../errors.js";
import type { ChatMessage, ToolCall, ToolChoice, ToolDefinition } from "../chatFormat/types.js";
import { answerConstraint } from "../core/answerConstraint.js";
import type { ChatGenerationRequest } from "../core/request.js";
import {
    conversationKey, joinTextParts, paramPath, parseWire, partText, reasoningSwitch, refuseDuplicateToolNames, refuseGrammarWithAnswer, resolveMaxTokens, selectTools,
    toolCallArguments, toSamplingOptions, type RequestHeaders, type SamplingDefaults, type TextPartRules
} from "../wire/index.js";
import { openAiFields, toStopList, type OpenAiRequestFields } from "./openAiFields.js";
import { parseResponseFormat } from "./responseFormat.js";

/** Only `text` parts are served (a text-only model); the others are refused by name. */
const textParts: TextPartRules = { textTypes: new Set(["text"]), noun: "Content parts" };
/** Any content part; each is checked where it is read. */
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

const chatWire = openAiFields.extend({
    model: z.string().nullish(),
    messages: z.array(wireMessage).min(1, "messages must contain at least one message"),
    tools: z.array(wireTool).nullish(),
    tool_choice: wireToolChoice.nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    max_completion_tokens: z.number().int().min(1).nullish(),
    chat_template_kwargs: z.record(z.unknown()).nullish(),
    reasoning_effort: z.enum(["none", "minimal", "low", "medium", "high", "xhigh"]).nullish(),
    include_reasoning: z.boolean().nullish(),
    n: z.number().int().min(1).nullish(),
    logprobs: z.boolean().nullish(),
    top_logprobs: z.number().int().min(0).max(20).nullish(),
    response_format: z.object({ type: z.string() }).passthrough().nullish()
});

/** A /v1/chat/completions request past the edge: validated, defaults applied, camelCase; the core's request plus the wire's own fields. */
export interface ChatRequest extends ChatGenerationRequest, OpenAiRequestFields {}

export function parseChatRequest(body: unknown, headers: RequestHeaders, defaults: SamplingDefaults): ChatRequest {
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
    refuseDuplicateToolNames(offered.map((tool) => tool.name), (index) => `tools[${index}].function.name`);
    const { toolChoice, tools } = selectTools(offered, requestedToolChoice(wire.tool_choice), { param: "tool_choice", nameParam: "tool_choice", requiredWord: "required" });
    const answer = answerConstraint(json, toolChoice, offered, wire.parallel_tool_calls !== false, (index) => `tools[${index}].function.parameters`);
    refuseGrammarWithAnswer(answer, wire.grammar, "response_format or an enforced tool_choice");
    return {
        model: wire.model ?? undefined,
        messages: toChatMessages(wire.messages),
        tools,
        toolChoice,
        parallelToolCalls: wire.parallel_tool_calls !== false,
        sampling: toSamplingOptions(wire, defaults),
        maxTokens: resolveMaxTokens(wire.max_completion_tokens ?? wire.max_tokens, defaults),
        stop: toStopList(wire.stop),
        stream: wire.stream === true,
        includeUsage: wire.stream_options?.include_usage === true,
        grammar: wire.grammar ?? undefined,
        templateKwargs: wire.chat_template_kwargs ?? {},
        reasoning: reasoningSwitch(wire.reasoning_effort),
        includeReasoning: wire.include_reasoning !== false,
        n: wire.n ?? 1,
        logprobs: wire.logprobs === true ? { top: wire.top_logprobs ?? 0 } : undefined,
        answer,
        cacheKey: conversationKey({ promptCacheKey: wire.prompt_cache_key, user: wire.user }, headers)
    };
}

function requestedToolChoice(choice: z.infer<typeof wireToolChoice> | null | undefined): ToolChoice | undefined {
    if (choice == null) return undefined;
    return typeof choice === "string" ? { type: choice } : { type: "function", name: choice.function.name };
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
                    const args = toolCallArguments(call.function.arguments, at("tool_calls", callIndex, "function", "arguments"));
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

function textOf(content: string | { type: string; [key: string]: unknown }[], param: string): string {
    return typeof content === "string" ? content : joinTextParts(content, param, "", (part, at) => partText(part, at, textParts));
}

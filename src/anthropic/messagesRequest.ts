import { z } from "zod";
import { InvalidRequestError } from "../errors.js";
import type { ChatMessage, ToolCall, ToolChoice, ToolDefinition } from "../chatFormat/types.js";
import { answerConstraint, type ChatGenerationRequest } from "../core/index.js";
import { grammarSchema } from "../grammar/clientSchema.js";
import {
    conversationKey, joinTextParts, maxStopStrings, paramPath, parseWire, partText, reasoningSwitch, refuseDuplicateToolNames, refuseGrammarWithAnswer, resolveMaxTokens,
    samplingWire, selectTools, toSamplingOptions, type RequestHeaders, type SamplingDefaults, type TextPartRules
} from "../wire/index.js";
import { thinkingFromSignature } from "./thinkingSignature.js";
import { withoutAttributionBlocks } from "./attributionBlocks.js";

/** Any content block: each type is checked where it is read, so an unsupported one is refused by name. */
const block = z.object({ type: z.string() }).passthrough();
const content = z.union([z.string(), z.array(block)]);

const wireMessage = z.object({ role: z.string(), content }).passthrough();

const thinkingBlock = z.object({ type: z.literal("thinking"), thinking: z.string(), signature: z.string().optional() }).passthrough();
const redactedThinkingBlock = z.object({ type: z.literal("redacted_thinking"), data: z.string() }).passthrough();
const toolUseBlock = z.object({
    type: z.literal("tool_use"), id: z.string().min(1), name: z.string().min(1), input: z.record(z.unknown())
}).passthrough();
const toolResultBlock = z.object({
    type: z.literal("tool_result"), tool_use_id: z.string().min(1), content: content.optional(), is_error: z.boolean().optional()
}).passthrough();

/**
 * A tool: Anthropic's custom tool (`type` absent or "custom"). Its server tools and the tools
 * its models are trained on (`bash_20250124`, `text_editor_…`, `web_search_…`: a `type` and no
 * `input_schema`) need Anthropic's side, so they are refused by name below.
 */
const wireTool = z.object({
    type: z.string().nullish(),
    name: z.string().min(1).max(128),
    description: z.string().nullish(),
    input_schema: z.record(z.unknown()).optional(),
    defer_loading: z.boolean().nullish()
}).passthrough();

const wireToolChoice = z.discriminatedUnion("type", [
    z.object({ type: z.literal("auto"), disable_parallel_tool_use: z.boolean().nullish() }).passthrough(),
    z.object({ type: z.literal("any"), disable_parallel_tool_use: z.boolean().nullish() }).passthrough(),
    z.object({ type: z.literal("tool"), name: z.string().min(1), disable_parallel_tool_use: z.boolean().nullish() }).passthrough(),
    z.object({ type: z.literal("none") }).passthrough()
], { errorMap: (issue, context) => issue.code === "invalid_union_discriminator"
    ? { message: "tool_choice.type must be one of auto, any, tool, none" }
    : { message: context.defaultError } });

const thinkingDisplay = z.enum(["summarized", "omitted"]).nullish();
const wireThinking = z.discriminatedUnion("type", [
    z.object({ type: z.literal("enabled"), budget_tokens: z.number().int().min(1), display: thinkingDisplay }).passthrough(),
    // Claude Code's: the model decides how much to think (Maple: no budget).
    z.object({ type: z.literal("adaptive"), display: thinkingDisplay }).passthrough(),
    z.object({ type: z.literal("disabled") }).passthrough()
], { errorMap: (issue, context) => issue.code === "invalid_union_discriminator"
    ? { message: "thinking.type must be one of enabled, adaptive, disabled" }
    : { message: context.defaultError } });

const jsonOutputFormat = z.object({ type: z.literal("json_schema"), schema: z.record(z.unknown()) }).passthrough();

/** Text blocks are read; images and documents are refused by name (the model reads text only). */
const textBlocks: TextPartRules = { textTypes: new Set(["text"]), noun: "Content blocks" };

/** The body of `/v1/messages/count_tokens`: the conversation, tools and thinking, nothing about sampling. */
const promptWire = z.object({
    model: z.string().nullish(),
    system: z.union([z.string(), z.array(block)]).nullish(),
    messages: z.array(wireMessage).min(1, "messages must contain at least one message"),
    tools: z.array(wireTool).nullish(),
    tool_choice: wireToolChoice.nullish(),
    thinking: wireThinking.nullish(),
    // Anthropic's structured output (`output_config.format`; `output_format` in its beta).
    output_config: z.object({ format: jsonOutputFormat.nullish() }).passthrough().nullish(),
    output_format: jsonOutputFormat.nullish(),
    chat_template_kwargs: z.record(z.unknown()).nullish()
});

const messagesWire = promptWire.merge(samplingWire).extend({
    max_tokens: z.number({ required_error: "max_tokens is required" }).int().min(1),
    stop_sequences: z.array(z.string().min(1, "stop sequences must not be empty"))
        .max(maxStopStrings, `at most ${maxStopStrings} stop sequences`).nullish(),
    stream: z.boolean().nullish(),
    // Only `user_id` is read (the conversation key); the rest is the client's own.
    metadata: z.unknown().optional()
});

/** What the template needs from a Messages request (all that count_tokens reads). */
export type MessagesPrompt = Pick<ChatGenerationRequest, "messages" | "tools" | "toolChoice" | "parallelToolCalls" | "templateKwargs" | "reasoning" | "answer"> & {
    model: string | undefined;
};

/** A /v1/messages request past the edge: the core's request (`thinkingBudget` from `thinking.budget_tokens`), and what the route reads. */
export interface MessagesRequest extends ChatGenerationRequest, MessagesPrompt {
    stream: boolean;
    /** `thinking.display: "omitted"`: thinking blocks carry only their signature (Claude Code). */
    omitThinking: boolean;
}

export function parseMessagesRequest(body: unknown, headers: RequestHeaders, defaults: SamplingDefaults): MessagesRequest {
    const wire = parseWire(messagesWire, body);
    const prompt = toMessagesPrompt(wire);
    const thinking = wire.thinking ?? undefined;
    const thinkingBudget = thinking?.type === "enabled" ? thinking.budget_tokens : undefined;
    if (thinkingBudget !== undefined && thinkingBudget >= wire.max_tokens) {
        // Anthropic's rule: the thought is part of the output max_tokens bounds.
        throw new InvalidRequestError(`thinking.budget_tokens (${thinkingBudget}) must be less than max_tokens (${wire.max_tokens}).`, "thinking.budget_tokens");
    }
    refuseGrammarWithAnswer(prompt.answer, wire.grammar, "output_config.format or tool_choice any/tool");
    return {
        ...prompt,
        sampling: toSamplingOptions(wire, defaults),
        maxTokens: resolveMaxTokens(wire.max_tokens, defaults),
        stop: wire.stop_sequences ?? [],
        stream: wire.stream === true,
        grammar: wire.grammar ?? undefined,
        n: 1,
        logprobs: undefined,
        includeReasoning: true,
        thinkingBudget,
        omitThinking: thinking !== undefined && thinking.type !== "disabled" && thinking.display === "omitted",
        // Anthropic's metadata.user_id stands for OpenAI's user: the same namespace.
        cacheKey: conversationKey({ user: userId(wire.metadata) }, headers)
    };
}

function userId(metadata: unknown): unknown {
    return typeof metadata === "object" && metadata !== null ? (metadata as Record<string, unknown>)["user_id"] : undefined;
}

/** A /v1/messages/count_tokens body: the prompt part of a Messages request. */
export function parseMessagesPrompt(body: unknown): MessagesPrompt {
    return toMessagesPrompt(parseWire(promptWire, body));
}

function toMessagesPrompt(wire: z.infer<typeof promptWire>): MessagesPrompt {
    const { tools: offered, wireIndex } = toToolDefinitions(wire.tools ?? []);
    const { toolChoice, tools } = selectTools(offered, requestedToolChoice(wire.tool_choice ?? undefined), { param: "tool_choice", nameParam: "tool_choice.name", requiredWord: "any" });
    const format = wire.output_config?.format ?? wire.output_format ?? undefined;
    const formatParam = wire.output_config?.format != null ? "output_config.format.schema" : "output_format.schema";
    const json = format === undefined ? undefined : { schema: grammarSchema(format.schema, formatParam) };
    const parallel = wire.tool_choice == null || !("disable_parallel_tool_use" in wire.tool_choice) || wire.tool_choice.disable_parallel_tool_use !== true;
    const system = wire.system == null ? "" : typeof wire.system === "string" ? wire.system : joinText(withoutAttributionBlocks(wire.system), "system");
    return {
        model: wire.model ?? undefined,
        messages: [...(system === "" ? [] : [{ role: "system" as const, content: system }]), ...toChatMessages(wire.messages)],
        tools,
        toolChoice,
        parallelToolCalls: parallel,
        templateKwargs: wire.chat_template_kwargs ?? {},
        reasoning: reasoningSwitch(wire.thinking == null ? undefined : wire.thinking.type !== "disabled"),
        answer: answerConstraint(json, toolChoice, offered, parallel, (index) => `tools[${wireIndex[index]}].input_schema`)
    };
}

/** The tools shown to the model, each with its index in the request's `tools` (deferred ones are left out). */
function toToolDefinitions(tools: z.infer<typeof wireTool>[]): { tools: ToolDefinition[]; wireIndex: number[] } {
    // Deferred tools too: a tool search can bring one into the conversation.
    refuseDuplicateToolNames(tools.map((tool) => tool.name), (index) => `tools[${index}].name`);
    const wireIndex: number[] = [];
    const definitions = tools.flatMap((tool, index): ToolDefinition[] => {
        if (tool.type != null && tool.type !== "custom") {
            throw new InvalidRequestError(`Tools of type '${tool.type}' run on Anthropic's side; Maple serves custom tools (name, description, input_schema).`, `tools[${index}].type`);
        }
        if (tool.input_schema === undefined) throw new InvalidRequestError("A tool needs an 'input_schema'.", `tools[${index}].input_schema`);
        // Anthropic loads a deferred tool only once a tool search finds it: it is not in the model's context.
        if (tool.defer_loading === true) return [];
        wireIndex.push(index);
        return [{ name: tool.name, ...(tool.description != null ? { description: tool.description } : {}), parameters: tool.input_schema }];
    });
    return { tools: definitions, wireIndex };
}

function requestedToolChoice(choice: z.infer<typeof wireToolChoice> | undefined): ToolChoice | undefined {
    if (choice === undefined) return undefined;
    switch (choice.type) {
        case "any": return { type: "required" };
        case "tool": return { type: "function", name: choice.name };
        default: return { type: choice.type };
    }
}

type WireBlock = z.infer<typeof block>;

/**
 * Anthropic's turns → Maple's chat messages. A user turn's `tool_result` blocks become tool
 * messages (in place, so results and text keep their order); an assistant turn's thinking
 * becomes its reasoning, its `tool_use` blocks its tool calls. `system` turns inside `messages`
 * (Claude Code sends them) stay where they are: moving them to the front would change the prompt's
 * prefix on every request and defeat the slot's prefix cache.
 */
function toChatMessages(messages: z.infer<typeof wireMessage>[]): ChatMessage[] {
    const toolUseIds = new Set<string>();
    const last = messages.length - 1;
    return messages.flatMap((message, index): ChatMessage[] => {
        const at = (...path: (string | number)[]): string => paramPath(["messages", index, ...path]);
        switch (message.role) {
            case "system":
            case "developer":
                return [{ role: "system", content: typeof message.content === "string" ? message.content : joinText(message.content, at("content")) }];
            case "user":
                return userMessages(message.content, toolUseIds, at);
            case "assistant":
                if (index === last) {
                    throw new InvalidRequestError("The last message is an assistant turn (a prefill); Maple answers after a user turn only.", at("role"));
                }
                return [assistantMessage(message.content, toolUseIds, at)];
            default:
                throw new InvalidRequestError(`role must be one of user, assistant, system; got '${message.role}'.`, at("role"));
        }
    });
}

function userMessages(content: string | WireBlock[], toolUseIds: ReadonlySet<string>, at: (...path: (string | number)[]) => string): ChatMessage[] {
    if (typeof content === "string") return [{ role: "user", content }];
    const messages: ChatMessage[] = [];
    let text: string[] = [];
    const flushText = (): void => {
        if (text.length > 0) messages.push({ role: "user", content: text.join("\n") });
        text = [];
    };
    content.forEach((item, blockIndex) => {
        if (item.type === "tool_result") {
            flushText();
            const result = parseBlock(toolResultBlock, item, at("content", blockIndex));
            if (!toolUseIds.has(result.tool_use_id)) {
                throw new InvalidRequestError(`No earlier assistant tool_use has the id '${result.tool_use_id}'.`, at("content", blockIndex, "tool_use_id"));
            }
            const output = result.content === undefined ? "" : typeof result.content === "string"
                ? result.content : joinText(result.content, at("content", blockIndex, "content"));
            // The template has no place for is_error: the model reads it in the result itself.
            messages.push({ role: "tool", content: result.is_error === true ? `Error: ${output}` : output, toolCallId: result.tool_use_id });
        } else {
            text.push(textOf(item, at("content", blockIndex)));
        }
    });
    flushText();
    return messages;
}

function assistantMessage(content: string | WireBlock[], toolUseIds: Set<string>, at: (...path: (string | number)[]) => string): ChatMessage {
    if (typeof content === "string") return { role: "assistant", content };
    const thoughts: string[] = [];
    const text: string[] = [];
    const toolCalls: ToolCall[] = [];
    content.forEach((item, blockIndex) => {
        const param = at("content", blockIndex);
        switch (item.type) {
            case "thinking": {
                const thinking = parseBlock(thinkingBlock, item, param);
                // Omitted thinking comes back empty, with Maple's signature carrying its text.
                const thought = thinking.thinking !== "" ? thinking.thinking : thinkingFromSignature(thinking.signature ?? "");
                if (thought !== undefined && thought !== "") thoughts.push(thought);
                break;
            }
            case "redacted_thinking": {
                // Only Maple's own can be read; another server's encrypted thinking is dropped.
                const thought = thinkingFromSignature(parseBlock(redactedThinkingBlock, item, param).data);
                if (thought !== undefined && thought !== "") thoughts.push(thought);
                break;
            }
            case "tool_use": {
                const call = parseBlock(toolUseBlock, item, param);
                toolUseIds.add(call.id);
                toolCalls.push({ id: call.id, name: call.name, arguments: JSON.stringify(call.input) });
                break;
            }
            default:
                text.push(textOf(item, param));
        }
    });
    return {
        role: "assistant",
        content: text.length === 0 ? null : text.join("\n"),
        ...(thoughts.length > 0 ? { reasoningContent: thoughts.join("\n\n") } : {}),
        ...(toolCalls.length > 0 ? { toolCalls } : {})
    };
}

/**
 * Text blocks joined with a newline (vLLM's convention for several text parts). Any other block
 * is refused by name: images and documents because the model reads text only.
 */
function joinText(blocks: WireBlock[], param: string): string {
    return joinTextParts(blocks, param, "\n", textOf);
}

/** A block where text is expected: a text block's text; a block that belongs elsewhere (a tool_use in a user turn) is refused as out of place. */
function textOf(item: WireBlock, param: string): string {
    if (item.type === "text" || item.type === "image" || item.type === "document") return partText(item, param, textBlocks);
    throw new InvalidRequestError(`Content blocks of type '${item.type}' are not supported here.`, `${param}.type`);
}

function parseBlock<T extends z.ZodTypeAny>(schema: T, item: WireBlock, param: string): z.infer<T> {
    const parsed = schema.safeParse(item);
    if (parsed.success) return parsed.data as z.infer<T>;
    const issue = parsed.error.issues[0]!;
    const path = paramPath([param, ...issue.path]);
    throw new InvalidRequestError(`Invalid value for '${path}': ${issue.message}`, path);
}

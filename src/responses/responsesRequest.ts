import type { ChatMessage, ToolCall, ToolChoice, ToolDefinition } from "../chatFormat/types.js";
import { answerConstraint, type ChatGenerationRequest } from "../core/index.js";
import { InvalidRequestError, NotFoundError } from "../errors.js";
import type { GrammarJsonSchema } from "../grammar/jsonSchemaSubset.js";
import { toStopList, type OpenAiRequestFields } from "../openai/openAiFields.js";
import { jsonAnswerFormat, type WireResponseFormat } from "../openai/responseFormat.js";
import {
    conversationKey, joinTextParts, newId, paramPath, parseWire, partText, reasoningSwitch, refuseDuplicateToolNames, refuseGrammarWithAnswer, resolveMaxTokens,
    selectTools, toolCallArguments, toSamplingOptions, type RequestHeaders, type SamplingDefaults, type TextPartRules, type ToolChoiceParams
} from "../wire/index.js";
import { decodeReasoning } from "./reasoningCarrier.js";
import { responsesWire, type ResponsesWire, type WireItem, type WireTool, type WireToolChoice } from "./responsesWire.js";

/** A tool the model is shown, and how its calls go back on the wire. */
export interface ResponsesTool {
    /** `function` → `function_call` items; `custom` (freeform) → `custom_tool_call` items with one string `input`. */
    kind: "function" | "custom";
    /** The namespace it was listed under (a `namespace` tool); its calls carry it. */
    namespace?: string;
    definition: ToolDefinition;
    /** Where its parameters sit in the request, for the error refusing a schema the grammar cannot enforce. */
    parametersParam?: string;
}

/** A /v1/responses request past the edge: validated, converted to Maple's conversation and sampling. */
export interface ResponsesRequest extends Omit<ChatGenerationRequest, "messages">, OpenAiRequestFields {
    /** `instructions`, as a system message at the front; not carried over to a continuation. */
    instructions: string | undefined;
    /** This request's input as conversation turns (earlier turns come from `previousResponseId`). */
    input: ChatMessage[];
    /** The input items in wire form, each with an id, for GET /v1/responses/{id}/input_items. */
    inputItems: Record<string, unknown>[];
    previousResponseId: string | undefined;
    /** Every offered tool (after flattening namespaces). */
    offered: ResponsesTool[];
    store: boolean;
    /** `include: ["reasoning.encrypted_content"]`: reasoning items carry the trace in a form the client can send back. */
    includeEncryptedReasoning: boolean;
    /** The request's settings as the response object echoes them. */
    echo: Record<string, unknown>;
}

/** Looks up an output item of a stored response (for `item_reference` inputs). */
export type ItemLookup = (id: string) => Record<string, unknown> | undefined;

/** Hosted tools run by OpenAI's servers; Maple has nothing to run them with. */
const hostedTools = new Set([
    "web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11", "file_search", "code_interpreter",
    "image_generation", "computer", "computer_use_preview", "computer_use", "mcp", "tool_search"
]);

/** The content parts read as text: what clients send and what Maple's own output items hold. */
const textParts: TextPartRules = { textTypes: new Set(["input_text", "output_text", "text", "summary_text", "reasoning_text"]), noun: "Content parts" };

export function parseResponsesRequest(body: unknown, headers: RequestHeaders, defaults: SamplingDefaults, lookupItem: ItemLookup): ResponsesRequest {
    const wire = parseWire(responsesWire, body);
    if (wire.background === true) {
        throw new InvalidRequestError("background responses are not supported: Maple runs a response while its request is open. Send background: false, or stream.", "background");
    }
    if (wire.conversation != null) {
        throw new InvalidRequestError("conversation objects are not supported; continue a conversation with previous_response_id.", "conversation");
    }
    if (wire.prompt != null) throw new InvalidRequestError("Stored prompt templates are not supported; send input and instructions.", "prompt");
    if (wire.input == null && wire.previous_response_id == null) throw new InvalidRequestError("input is required.", "input");
    const include = wire.include ?? [];
    include.forEach((name, index) => {
        if (name !== "reasoning.encrypted_content" && name !== "message.output_text.logprobs") {
            throw new InvalidRequestError(`include '${name}' is not supported; Maple serves 'reasoning.encrypted_content' and 'message.output_text.logprobs'.`, `include[${index}]`);
        }
    });
    if (include.includes("message.output_text.logprobs") || wire.top_logprobs != null) {
        throw new InvalidRequestError("Logprobs are not served on /v1/responses yet; use /v1/chat/completions with logprobs.", wire.top_logprobs != null ? "top_logprobs" : "include");
    }

    const offered = toTools(wire.tools ?? []);
    const definitions = offered.map((tool) => tool.definition);
    const { toolChoice, tools } = selectTools(definitions, requestedToolChoice(wire.tool_choice), toolChoiceParams(wire.tool_choice, offered));
    const json = parseTextFormat(wire.text?.format);
    const answer = answerConstraint(json, toolChoice, definitions, wire.parallel_tool_calls !== false,
        (index) => offered[index]?.parametersParam ?? `tools[${index}].parameters`);
    refuseGrammarWithAnswer(answer, wire.grammar, "text.format or an enforced tool_choice");
    const { messages, items } = toConversation(wire.input ?? [], lookupItem);
    const store = wire.store !== false;
    return {
        model: wire.model ?? undefined,
        instructions: wire.instructions ?? undefined,
        input: messages,
        inputItems: items,
        previousResponseId: wire.previous_response_id ?? undefined,
        offered,
        tools,
        toolChoice,
        parallelToolCalls: wire.parallel_tool_calls !== false,
        templateKwargs: wire.chat_template_kwargs ?? {},
        reasoning: reasoningSwitch(wire.reasoning?.effort),
        answer,
        includeReasoning: true,
        store,
        includeEncryptedReasoning: include.includes("reasoning.encrypted_content"),
        sampling: toSamplingOptions(wire, defaults),
        maxTokens: resolveMaxTokens(wire.max_output_tokens ?? wire.max_tokens, defaults),
        stop: toStopList(wire.stop),
        stream: wire.stream === true,
        includeUsage: true,
        grammar: wire.grammar ?? undefined,
        n: 1,
        logprobs: undefined,
        echo: settingsEcho(wire, store),
        cacheKey: conversationKey({ promptCacheKey: wire.prompt_cache_key, user: wire.user }, headers)
    };
}

/** What the response object repeats of the request (OpenAI echoes its settings). */
function settingsEcho(wire: ResponsesWire, store: boolean): Record<string, unknown> {
    return {
        instructions: wire.instructions ?? null,
        max_output_tokens: wire.max_output_tokens ?? null,
        metadata: wire.metadata ?? {},
        parallel_tool_calls: wire.parallel_tool_calls ?? true,
        previous_response_id: wire.previous_response_id ?? null,
        prompt_cache_key: wire.prompt_cache_key ?? null,
        reasoning: { effort: wire.reasoning?.effort ?? null, summary: wire.reasoning?.summary ?? wire.reasoning?.generate_summary ?? null },
        safety_identifier: wire.safety_identifier ?? null,
        service_tier: "default",
        store,
        temperature: wire.temperature ?? null,
        text: { format: wire.text?.format ?? { type: "text" }, verbosity: wire.text?.verbosity ?? "medium" },
        tool_choice: wire.tool_choice ?? "auto",
        tools: wire.tools ?? [],
        top_logprobs: wire.top_logprobs ?? 0,
        top_p: wire.top_p ?? null,
        truncation: wire.truncation ?? "disabled",
        background: false,
        user: wire.user ?? null
    };
}

function toTools(tools: WireTool[]): ResponsesTool[] {
    const result: ResponsesTool[] = [];
    tools.forEach((tool, index) => {
        const at = `tools[${index}]`;
        if (tool.type === "namespace") {
            const name = typeof tool["name"] === "string" ? tool["name"] : undefined;
            const inner: unknown[] = Array.isArray(tool["tools"]) ? tool["tools"] : [];
            inner.forEach((innerTool, innerIndex) => {
                const innerAt = `${at}.tools[${innerIndex}]`;
                // Only the outer list is checked by the wire schema: a null here would be read as a tool.
                if (typeof innerTool !== "object" || innerTool === null) throw new InvalidRequestError("A namespace's tools must be tool objects.", innerAt);
                result.push(toTool(innerTool as WireTool, innerAt, name));
            });
            return;
        }
        result.push(toTool(tool, at, undefined));
    });
    // Names are unique across namespaces too: a call names only its tool.
    refuseDuplicateToolNames(result.map((tool) => tool.definition.name), () => "tools");
    return result;
}

function toTool(tool: WireTool, at: string, namespace: string | undefined): ResponsesTool {
    const name = tool["name"];
    const description = typeof tool["description"] === "string" ? { description: tool["description"] } : {};
    const named = (): string => {
        if (typeof name !== "string" || name === "" || name.length > 128) throw new InvalidRequestError("A tool needs a 'name' (1 to 128 characters).", `${at}.name`);
        return name;
    };
    const inNamespace = namespace === undefined ? {} : { namespace };
    if (tool.type === "function") {
        const parameters = tool["parameters"];
        if (parameters != null && (typeof parameters !== "object" || Array.isArray(parameters))) {
            throw new InvalidRequestError("A function tool's parameters must be a JSON schema object.", `${at}.parameters`);
        }
        return { kind: "function", ...inNamespace, parametersParam: `${at}.parameters`, definition: { name: named(), ...description, parameters: (parameters as Record<string, unknown> | null) ?? { type: "object", properties: {} } } };
    }
    if (tool.type === "custom") {
        // A freeform tool takes text: the model calls it as a function with one string argument.
        // Its `format` (a Lark or regex grammar) is not enforced: the model is shown it in the description.
        return {
            kind: "custom", ...inNamespace,
            definition: {
                name: named(), ...description,
                parameters: { type: "object", properties: { input: { type: "string", description: "The tool's input, as free text" } }, required: ["input"] }
            }
        };
    }
    if (hostedTools.has(tool.type)) {
        throw new InvalidRequestError(`Tool type '${tool.type}' is a hosted tool that OpenAI's servers run; Maple cannot run it. Leave it out (Codex: web_search = "disabled").`, `${at}.type`);
    }
    throw new InvalidRequestError(`Tool type '${tool.type}' is not supported; Maple serves 'function', 'custom' (freeform) and 'namespace' tools.`, `${at}.type`);
}

function requestedToolChoice(choice: WireToolChoice | null | undefined): ToolChoice | undefined {
    if (choice == null) return undefined;
    if (typeof choice === "string") return { type: choice };
    if (choice.type !== "function" && choice.type !== "custom") {
        throw new InvalidRequestError(`tool_choice of type '${choice.type}' is not supported; use none, auto, required, or a function or custom tool by name.`, "tool_choice.type");
    }
    return { type: "function", name: choice.name ?? "" };
}

/** A named choice names a tool of its own kind: `{type: "custom", name}` a freeform tool. */
function toolChoiceParams(choice: WireToolChoice | null | undefined, offered: readonly ResponsesTool[]): ToolChoiceParams {
    const params = { param: "tool_choice", nameParam: "tool_choice.name", requiredWord: "required" };
    if (choice == null || typeof choice === "string") return params;
    return { ...params, nameable: { tools: offered.filter((tool) => tool.kind === choice.type).map((tool) => tool.definition), noun: `${choice.type} tools` } };
}

/** `text.format`: the JSON the answer must be, or undefined for plain text; a `json_schema` format holds its `schema` itself. */
function parseTextFormat(format: WireResponseFormat | null | undefined): { schema: GrammarJsonSchema | undefined } | undefined {
    return jsonAnswerFormat(format, "text.format", (jsonSchema) => {
        const schema = jsonSchema["schema"];
        if (schema === undefined) throw new InvalidRequestError("text.format of type 'json_schema' needs a 'schema'.", "text.format.schema");
        return { schema, param: "text.format.schema" };
    });
}

/** The text of a message's content: a string, or `input_text` / `output_text` / `text` parts (a `refusal` part's refusal). */
function contentText(content: unknown, at: string): string {
    if (typeof content === "string") return content;
    if (!Array.isArray(content)) throw new InvalidRequestError("content must be a string or a list of text parts.", at);
    return joinTextParts(content as unknown[], at, "", (part, param) => {
        const record = (part ?? {}) as Record<string, unknown>;
        if (record["type"] === "refusal" && typeof record["refusal"] === "string") return record["refusal"];
        return partText(part, param, textParts);
    });
}

/** The output of a tool call as text: a string, or text parts. */
function outputText(output: unknown, at: string): string {
    if (typeof output === "string") return output;
    return contentText(output, at);
}

/** The assistant turn being assembled from consecutive reasoning, assistant message and call items. */
interface AssistantTurn {
    content: string | null;
    reasoning: string | undefined;
    toolCalls: ToolCall[];
}

/**
 * Input items → conversation turns. Consecutive `reasoning`, assistant `message`,
 * `function_call` and `custom_tool_call` items are one assistant turn (the Responses API lists
 * them flat); `function_call_output` / `custom_tool_call_output` become tool messages answering
 * their `call_id`. `item_reference` is replaced by the stored item it names.
 */
function toConversation(input: string | WireItem[], lookupItem: ItemLookup): { messages: ChatMessage[]; items: Record<string, unknown>[] } {
    if (typeof input === "string") {
        return { messages: [{ role: "user", content: input }], items: [{ id: newItemId("msg"), type: "message", role: "user", status: "completed", content: [{ type: "input_text", text: input }] }] };
    }
    const messages: ChatMessage[] = [];
    const items: Record<string, unknown>[] = [];
    let turn: AssistantTurn | undefined;
    const assistant = (): AssistantTurn => (turn ??= { content: null, reasoning: undefined, toolCalls: [] });
    const endTurn = (): void => {
        if (turn === undefined) return;
        messages.push({
            role: "assistant", content: turn.content,
            ...(turn.reasoning !== undefined ? { reasoningContent: turn.reasoning } : {}),
            ...(turn.toolCalls.length > 0 ? { toolCalls: turn.toolCalls } : {})
        });
        turn = undefined;
    };
    input.forEach((given, index) => {
        const at = (...path: (string | number)[]): string => paramPath(["input", index, ...path]);
        let item = given as Record<string, unknown>;
        if (item["type"] === "item_reference") {
            const id = item["id"];
            const found = typeof id === "string" ? lookupItem(id) : undefined;
            if (found === undefined) throw new NotFoundError(`Item with id '${String(id)}' not found: it is not an output of a stored response (store: true), or it expired.`, at("id"));
            item = found;
        }
        items.push({ ...item, id: typeof item["id"] === "string" ? item["id"] : newItemId(item["type"] === "message" || item["type"] === undefined ? "msg" : "item") });
        const type = item["type"] ?? "message";
        switch (type) {
            case "message": {
                const role = item["role"];
                if (role === "assistant") {
                    const text = contentText(item["content"], at("content"));
                    const current = assistant();
                    if (current.toolCalls.length > 0) {
                        endTurn();
                        assistant().content = text;
                    } else {
                        current.content = (current.content ?? "") + text;
                    }
                    return;
                }
                endTurn();
                if (role !== "user" && role !== "system" && role !== "developer") {
                    throw new InvalidRequestError("role must be one of user, system, developer, assistant.", at("role"));
                }
                messages.push({ role, content: contentText(item["content"], at("content")) });
                return;
            }
            case "reasoning": {
                const current = turn !== undefined && (turn.content !== null || turn.toolCalls.length > 0) ? (endTurn(), assistant()) : assistant();
                const text = reasoningText(item, at);
                if (text !== undefined) current.reasoning = current.reasoning === undefined ? text : `${current.reasoning}\n${text}`;
                return;
            }
            case "function_call":
            case "custom_tool_call": {
                const callId = item["call_id"];
                const name = item["name"];
                if (typeof callId !== "string" || callId === "") throw new InvalidRequestError("A tool call item needs a 'call_id'.", at("call_id"));
                if (typeof name !== "string" || name === "") throw new InvalidRequestError("A tool call item needs a 'name'.", at("name"));
                let args: string;
                if (type === "function_call") {
                    args = toolCallArguments(item["arguments"], at("arguments"));
                } else {
                    const text = item["input"];
                    if (typeof text !== "string") throw new InvalidRequestError("A custom tool call needs a string 'input'.", at("input"));
                    args = JSON.stringify({ input: text });
                }
                assistant().toolCalls.push({ id: callId, name, arguments: args });
                return;
            }
            case "function_call_output":
            case "custom_tool_call_output": {
                endTurn();
                const callId = item["call_id"];
                if (typeof callId !== "string" || callId === "") throw new InvalidRequestError("A tool output item needs the 'call_id' of its call.", at("call_id"));
                const name = findCallName(messages, callId);
                messages.push({ role: "tool", content: outputText(item["output"], at("output")), toolCallId: callId, ...(name !== undefined ? { name } : {}) });
                return;
            }
            default:
                throw new InvalidRequestError(`Input items of type '${String(type)}' are not supported; Maple reads message, reasoning, function_call, function_call_output, custom_tool_call, custom_tool_call_output and item_reference.`, at("type"));
        }
    });
    endTurn();
    return { messages, items };
}

/**
 * A reasoning item's trace: its `content` (reasoning_text), else Maple's own `encrypted_content`
 * (see reasoningCarrier.ts; another server's opaque blob is skipped), else its `summary` texts.
 * Any of the three is accepted, since clients send back what they kept.
 */
function reasoningText(item: Record<string, unknown>, at: (...path: (string | number)[]) => string): string | undefined {
    const content = item["content"];
    if (Array.isArray(content) && content.length > 0) return contentText(content, at("content"));
    const encrypted = item["encrypted_content"];
    if (typeof encrypted === "string") {
        const decoded = decodeReasoning(encrypted);
        if (decoded !== undefined) return decoded;
    }
    const summary = item["summary"];
    if (Array.isArray(summary) && summary.length > 0) return contentText(summary, at("summary"));
    return undefined;
}

function findCallName(messages: ChatMessage[], callId: string): string | undefined {
    for (let index = messages.length - 1; index >= 0; index--) {
        const message = messages[index]!;
        if (message.role === "assistant") {
            const call = message.toolCalls?.find((candidate) => candidate.id === callId);
            if (call !== undefined) return call.name;
        }
    }
    return undefined;
}

function newItemId(prefix: string): string {
    return newId(prefix, "_");
}

import { callPerTool, gbnfLiteral } from "../../grammar/answerGrammar.js";
import { toolCallGrammarSchema } from "../../grammar/jsonSchemaSubset.js";
import type { ToolBlock } from "../outputParser.js";
import { toTemplateMessages, type TemplateMessage } from "../templateMessages.js";
import type { ParsedToolCall } from "../toolCallBody.js";
import type { ChatMessage } from "../types.js";
import { blockFamily } from "./blockFamily.js";
import type { ChatFormat } from "./chatFormat.js";

/**
 * Mistral's tool calls, both generations of them:
 *
 * - `mistral` (tokenizer v11 and later: Mistral Small 3.2, Devstral, Magistral, Ministral 3):
 *   `[TOOL_CALLS]get_weather[ARGS]{"city": "Lagos"}`, each call after its own `[TOOL_CALLS]`;
 *   reasoning (Magistral, Ministral 3 Reasoning) in `[THINK]…[/THINK]`.
 * - `mistral-nemo` (Mistral Nemo, Mistral Small 3.0 / 3.1):
 *   `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Lagos"}, "id": "a1b2c3d4e"}]`;
 *   no reasoning.
 *
 * The calls end the answer (the model's `</s>` follows), so a call is read when the generation
 * ends. Both formats read both syntaxes; each enforces its own. Followed: the templates, and
 * llama.cpp's parsers (`common_chat_parse_mistral_nemo` / `_magistral` before its autoparser,
 * `common/parsers/ministral3.cpp` after). Uncertain: Mistral Small 3.2's template renders a past
 * call as `[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{…}`; the parser takes the `[CALL_ID]` when a model
 * writes one, the enforcing grammar leaves it out. Neither template has a reasoning switch.
 */

const TOOL_CALLS = "[TOOL_CALLS]";
const ARGS = "[ARGS]";
const CALL_ID = "[CALL_ID]";
const THINK_OPEN = "[THINK]";
const THINK_CLOSE = "[/THINK]";

/** The calls after the first `[TOOL_CALLS]`: a JSON list (Nemo), or `NAME[ARGS]{…}` pieces each after its own `[TOOL_CALLS]`. */
export function parseMistralCalls(body: string): ParsedToolCall[] | undefined {
    return body.trimStart().startsWith("[") ? parseCallList(body) : parseArgsCalls(body);
}

function parseCallList(body: string): ParsedToolCall[] | undefined {
    let list: unknown;
    try {
        list = JSON.parse(body);
    } catch {
        return undefined;
    }
    if (!Array.isArray(list) || list.length === 0) return undefined;
    const calls: ParsedToolCall[] = [];
    for (const item of list as unknown[]) {
        if (!isObject(item) || typeof item["name"] !== "string" || item["name"] === "") return undefined;
        const args = item["arguments"] ?? {};
        if (!isObject(args)) return undefined;
        calls.push({ name: item["name"], arguments: JSON.stringify(args) });
    }
    return calls;
}

function parseArgsCalls(body: string): ParsedToolCall[] | undefined {
    const calls: ParsedToolCall[] = [];
    for (const piece of body.split(TOOL_CALLS)) {
        const args = piece.indexOf(ARGS);
        if (args < 0) return undefined;
        const name = piece.slice(0, args).split(CALL_ID)[0]!.trim();
        let value: unknown;
        try {
            value = JSON.parse(piece.slice(args + ARGS.length));
        } catch {
            return undefined;
        }
        if (name === "" || /\s/.test(name) || !isObject(value)) return undefined;
        calls.push({ name, arguments: JSON.stringify(value) });
    }
    return calls;
}

function isObject(value: unknown): value is Record<string, unknown> {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}

const toolBlocks: readonly ToolBlock[] = [{ open: TOOL_CALLS, close: undefined, parse: parseMistralCalls }];

/**
 * Mistral's templates refuse tool call ids that are not 9 alphanumeric characters (Nemo's and
 * Small 3.2's render them): each id becomes one, the same for a call and its result, and the same
 * on every turn (so the prompt's prefix, and its cache, stay the same).
 */
export function mistralCallId(id: string): string {
    if (/^[A-Za-z0-9]{9}$/.test(id)) return id;
    // FNV-1a over the id, twice (two seeds) for 9 base-36 digits.
    const hash = (seed: number): number => {
        let value = seed;
        for (let index = 0; index < id.length; index++) value = Math.imul(value ^ id.charCodeAt(index), 16777619) >>> 0;
        return value;
    };
    return (hash(2166136261).toString(36) + hash(84696351).toString(36)).padStart(9, "0").slice(-9);
}

/**
 * The conversation as Mistral's templates read it: 9-character call ids; and for the templates
 * that render reasoning (Magistral's and Ministral 3's `[THINK]` blocks), an assistant turn's
 * reasoning and text as their content blocks, as llama.cpp's Ministral 3 handler passes them.
 */
function mistralTemplateMessages(messages: readonly ChatMessage[], template: string): TemplateMessage[] {
    const withIds = messages.map((message): ChatMessage => {
        if (message.role === "tool" && message.toolCallId !== undefined) return { ...message, toolCallId: mistralCallId(message.toolCallId) };
        if (message.role === "assistant" && message.toolCalls !== undefined) {
            return { ...message, toolCalls: message.toolCalls.map((call) => ({ ...call, id: mistralCallId(call.id) })) };
        }
        return message;
    });
    const converted = toTemplateMessages(withIds, template.includes("developer"));
    if (!template.includes(THINK_OPEN)) return converted;
    return converted.map((message, index) => {
        const original = withIds[index]!;
        if (original.role !== "assistant" || original.reasoningContent === undefined) return message;
        const { reasoning_content: _reasoning, ...rest } = message;
        const blocks = [{ type: "thinking", thinking: original.reasoningContent }, ...(original.content ? [{ type: "text", text: original.content }] : [])];
        return { ...rest, content: blocks };
    });
}

const shared = {
    reasoning: { open: THINK_OPEN, close: THINK_CLOSE },
    toolBlocks,
    preservedTokens: [TOOL_CALLS, ARGS, CALL_ID, THINK_OPEN, THINK_CLOSE],
    reasoningVariables: () => ({}),
    templateMessages: mistralTemplateMessages
};

export const mistralFormat: ChatFormat = blockFamily({
    ...shared,
    name: "mistral",
    toolCalls: async ({ tools, parallel }, rules) => [
        `maple-calls ::= ${parallel ? "maple-call+" : "maple-call"}`,
        ...await callPerTool(tools, rules, (name) => [`${TOOL_CALLS}${name}${ARGS}`, ""])
    ]
});

export const mistralNemoFormat: ChatFormat = blockFamily({
    ...shared,
    name: "mistral-nemo",
    // That generation does not reason.
    reasoning: undefined,
    toolCalls: async ({ tools, parallel }, rules) => [
        `maple-calls ::= ${gbnfLiteral(`${TOOL_CALLS}[`)} call-maple-json ${parallel ? '( ", " call-maple-json )* ' : ""}"]"`,
        await rules(toolCallGrammarSchema(tools), "call-")
    ]
});

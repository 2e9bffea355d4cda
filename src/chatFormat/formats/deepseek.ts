import { callPerTool, gbnfLiteral } from "../../grammar/answerGrammar.js";
import type { ToolBlock } from "../outputParser.js";
import { toTemplateMessages, type TemplateMessage } from "../templateMessages.js";
import type { ParsedToolCall } from "../toolCallBody.js";
import type { ChatMessage, ReasoningSwitch } from "../types.js";
import { blockFamily } from "./blockFamily.js";
import type { ChatFormat } from "./chatFormat.js";
import { THINK_CLOSE, THINK_OPEN, thinkBlock } from "./hermes.js";

/**
 * DeepSeek's tool calls, in a section of its own special tokens after the reasoning
 * (`<think>…</think>`), in two syntaxes:
 *
 * - `deepseek-r1` (DeepSeek R1, V3-0324, the R1 distills):
 *   `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{…}\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`
 * - `deepseek-v3.1` (DeepSeek V3.1):
 *   `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`
 *
 * Both read both; each enforces its own. Followed: the templates and llama.cpp's parsers
 * (`common_chat_parse_deepseek_r1` / `_v3_1` before its autoparser), including the misspelt
 * section openings R1 writes at times (`<｜tool_calls_begin｜>`, `<｜tool calls begin｜>`,
 * `<｜tool\_calls\_begin｜>`, `<｜tool▁calls｜>`); a section the model ends its turn in without
 * closing is still read. The reasoning switch is the templates' `thinking` (V3.1) and
 * `enable_thinking` (the R1 templates that have one).
 */

const CALLS_BEGIN = "<｜tool▁calls▁begin｜>";
const CALLS_END = "<｜tool▁calls▁end｜>";
const CALL_BEGIN = "<｜tool▁call▁begin｜>";
const CALL_END = "<｜tool▁call▁end｜>";
const SEPARATOR = "<｜tool▁sep｜>";
const sectionOpenings = [CALLS_BEGIN, "<｜tool_calls_begin｜>", "<｜tool calls begin｜>", "<｜tool\\_calls\\_begin｜>", "<｜tool▁calls｜>"];

/** The calls of a section's body: each `<｜tool▁call▁begin｜>…<｜tool▁call▁end｜>`, in either syntax. */
export function parseDeepSeekCalls(body: string): ParsedToolCall[] | undefined {
    const pieces = body.split(CALL_BEGIN);
    if (pieces.shift()!.trim() !== "") return undefined;
    const calls: ParsedToolCall[] = [];
    for (const piece of pieces) {
        const end = piece.indexOf(CALL_END);
        if (end < 0 || piece.slice(end + CALL_END.length).trim() !== "") return undefined;
        const call = parseCall(piece.slice(0, end));
        if (call === undefined) return undefined;
        calls.push(call);
    }
    return calls.length === 0 ? undefined : calls;
}

/** `function<｜tool▁sep｜>NAME\n```json\n{…}\n```` (R1) or `NAME<｜tool▁sep｜>{…}` (V3.1). */
function parseCall(text: string): ParsedToolCall | undefined {
    const separator = text.indexOf(SEPARATOR);
    if (separator < 0) return undefined;
    const before = text.slice(0, separator).trim();
    const after = text.slice(separator + SEPARATOR.length);
    let name: string;
    let json: string;
    if (before === "function" || before === "") {
        const fenced = /^([^\n]+)\n```(?:json)?\n([\s\S]*?)\n?```\s*$/.exec(after);
        if (fenced === null) return undefined;
        name = fenced[1]!.trim();
        json = fenced[2]!;
    } else {
        name = before;
        json = after;
    }
    try {
        const args = JSON.parse(json) as unknown;
        if (name === "" || typeof args !== "object" || args === null || Array.isArray(args)) return undefined;
        return { name, arguments: JSON.stringify(args) };
    } catch {
        return undefined;
    }
}

const toolBlocks: readonly ToolBlock[] = sectionOpenings.map((open) => ({ open, close: CALLS_END, closedByEnd: true, parse: parseDeepSeekCalls }));

/** V3.1's `thinking` and the R1 templates' `enable_thinking`: on or off, no levels. */
function thinkingVariables(reasoning: ReasoningSwitch | undefined): Record<string, unknown> {
    return reasoning === undefined ? {} : { thinking: reasoning.enabled, enable_thinking: reasoning.enabled };
}

/**
 * The conversation as DeepSeek's templates read it: an assistant turn of only calls has no
 * content at all (R1's templates test `content is none` and would render an empty turn after
 * the calls); and the templates that write a call's arguments by concatenation
 * (`'```json' + '\n' + tool['function']['arguments']`, R1-Distill-Llama's) get them as the JSON
 * text, the others as an object for their `| tojson`.
 */
function deepSeekTemplateMessages(messages: readonly ChatMessage[], template: string): TemplateMessage[] {
    const argumentsAsText = /\[['"]arguments['"]\]\s*\+/.test(template);
    return toTemplateMessages(messages, template.includes("developer")).map((message, index) => {
        const original = messages[index]!;
        if (original.role !== "assistant" || original.toolCalls === undefined || original.toolCalls.length === 0) return message;
        const calls = message["tool_calls"] as { function: Record<string, unknown> }[];
        if (argumentsAsText) original.toolCalls.forEach((call, callIndex) => {
            calls[callIndex]!.function["arguments"] = call.arguments.trim() === "" ? "{}" : call.arguments;
        });
        return original.content === null ? { ...message, content: null } : message;
    });
}

const shared = {
    reasoning: thinkBlock,
    toolBlocks,
    preservedTokens: [THINK_OPEN, THINK_CLOSE, ...sectionOpenings, CALLS_END, CALL_BEGIN, CALL_END, SEPARATOR],
    reasoningVariables: thinkingVariables,
    templateMessages: deepSeekTemplateMessages
};

/** The calls section around the calls, `between` written between two calls. */
function section(parallel: boolean, between: string): string {
    return `maple-calls ::= ${gbnfLiteral(CALLS_BEGIN)} maple-call ${parallel ? `( ${between === "" ? "" : `${gbnfLiteral(between)} `}maple-call )* ` : ""}${gbnfLiteral(CALLS_END)}`;
}

export const deepSeekR1Format: ChatFormat = blockFamily({
    ...shared,
    name: "deepseek-r1",
    toolCalls: async ({ tools, parallel }, rules) => [
        section(parallel, "\n"),
        ...await callPerTool(tools, rules, (name) => [`${CALL_BEGIN}function${SEPARATOR}${name}\n\`\`\`json\n`, `\n\`\`\`${CALL_END}`])
    ]
});

export const deepSeekV31Format: ChatFormat = blockFamily({
    ...shared,
    name: "deepseek-v3.1",
    toolCalls: async ({ tools, parallel }, rules) => [
        section(parallel, ""),
        ...await callPerTool(tools, rules, (name) => [`${CALL_BEGIN}${name}${SEPARATOR}`, CALL_END])
    ]
});

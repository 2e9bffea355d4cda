import { gbnfLiteral } from "../../grammar/answerGrammar.js";
import type { GrammarJsonSchema } from "../../grammar/jsonSchemaSubset.js";
import { oneCallPerTurn, toTemplateMessages } from "../templateMessages.js";
import type { ParsedToolCall } from "../toolCallBody.js";
import type { ToolDefinition } from "../types.js";
import { blockFamily } from "./blockFamily.js";
import type { ChatFormat } from "./chatFormat.js";

/**
 * Llama 3.1 / 3.2 / 3.3: no reasoning; a tool call is the whole answer as one JSON object,
 * `{"name": "get_weather", "parameters": {"city": "Lagos"}}` (the model then ends its turn with
 * `<|eot_id|>`), and Llama 3.1's built-in tools are called after `<|python_tag|>` as
 * `brave_search.call(query="…")` (ended by `<|eom_id|>`).
 *
 * Followed: Meta's template and llama.cpp's Llama 3.x parser (`common_chat_parse_llama_3_1`):
 * a call only at the very start of the answer (text then JSON is text), `"type": "function"`
 * accepted before `"name"`, `"arguments"` accepted for `"parameters"`. Uncertain, and Maple's
 * choice: several calls in one answer (the template renders one per turn; Llama 3.2 / 3.3 write
 * them one after the other) are read when separated by whitespace or `;`, and written so
 * (newline-separated) when enforced; text after the calls makes the whole answer text; after
 * `<|python_tag|>`, JSON calls are read too, and plain code is a call to an offered `python` or
 * `code_interpreter` tool (`{"code": …}`).
 */

const PYTHON_TAG = "<|python_tag|>";

/** The calls of a whole answer that starts with `{`, or undefined when it is not only calls. */
export function parseJsonCalls(body: string): ParsedToolCall[] | undefined {
    const values = jsonObjects(body);
    if (values === undefined) return undefined;
    const calls: ParsedToolCall[] = [];
    for (const value of values) {
        const name = value["name"];
        const args = value["parameters"] ?? value["arguments"] ?? {};
        if (typeof name !== "string" || name === "" || (value["type"] !== undefined && value["type"] !== "function")) return undefined;
        if (typeof args !== "object" || args === null || Array.isArray(args)) return undefined;
        calls.push({ name, arguments: JSON.stringify(args) });
    }
    return calls.length === 0 ? undefined : calls;
}

/** JSON objects one after the other, separated by whitespace or `;`; undefined when the text is anything else. */
function jsonObjects(text: string): Record<string, unknown>[] | undefined {
    const objects: Record<string, unknown>[] = [];
    let at = 0;
    for (;;) {
        while (at < text.length && /[\s;]/.test(text[at]!)) at += 1;
        if (at === text.length) return objects;
        if (text[at] !== "{") return undefined;
        const end = objectEnd(text, at);
        if (end === undefined) return undefined;
        try {
            objects.push(JSON.parse(text.slice(at, end)) as Record<string, unknown>);
        } catch {
            return undefined;
        }
        at = end;
    }
}

/** Where the JSON object starting at `start` ends (after its closing brace), by its braces outside strings. */
function objectEnd(text: string, start: number): number | undefined {
    let depth = 0;
    let inString = false;
    for (let at = start; at < text.length; at++) {
        const character = text[at];
        if (inString) {
            if (character === "\\") at += 1;
            else if (character === '"') inString = false;
        } else if (character === '"') inString = true;
        else if (character === "{") depth += 1;
        else if (character === "}" && --depth === 0) return at + 1;
    }
    return undefined;
}

/** Whether an answer beginning with `body` can still be a JSON call: `{"name"` or `{"type": "function", "name"` so far, whitespace aside. */
function couldBeJsonCall(body: string): boolean {
    const compact = body.slice(0, 48).replace(/\s+/g, "");
    return ['{"name"', '{"type":"function","name"'].some((opening) => opening.startsWith(compact) || compact.startsWith(opening));
}

/** After `<|python_tag|>`: JSON calls, a built-in tool's `NAME.call(key="value", …)`, or code for a python tool. */
export function parsePythonTag(body: string, tools: readonly ToolDefinition[]): ParsedToolCall[] | undefined {
    const text = body.trim();
    if (text.startsWith("{")) return parseJsonCalls(text);
    const builtin = /^(\w+)\.call\(([\s\S]*)\)$/.exec(text);
    if (builtin !== null) {
        const args = callArguments(builtin[2]!);
        return args === undefined ? undefined : [{ name: builtin[1]!, arguments: JSON.stringify(args) }];
    }
    const python = tools.find((tool) => tool.name === "python" || tool.name === "code_interpreter");
    return python === undefined || text === "" ? undefined : [{ name: python.name, arguments: JSON.stringify({ code: body }) }];
}

/** `query="x", topn=3`: keyword arguments whose values are JSON literals. */
function callArguments(text: string): Record<string, unknown> | undefined {
    const args: Record<string, unknown> = {};
    const pattern = /\s*(\w+)\s*=\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null)\s*(?:,|$)/y;
    let at = 0;
    while (at < text.length) {
        pattern.lastIndex = at;
        const match = pattern.exec(text);
        if (match === null) return text.slice(at).trim() === "" ? args : undefined;
        args[match[1]!] = JSON.parse(match[2]!) as unknown;
        at = pattern.lastIndex;
    }
    return args;
}

/** A call's JSON schema as Llama writes it: `{"name": NAME, "parameters": {…}}`. */
function llamaCallSchema(tools: readonly { name: string; parameters: GrammarJsonSchema }[]): GrammarJsonSchema {
    const calls = tools.map((tool) => ({ type: "object", properties: { name: { const: tool.name }, parameters: tool.parameters } }));
    return (calls.length === 1 ? calls[0] : { oneOf: calls }) as unknown as GrammarJsonSchema;
}

export const llama3Format: ChatFormat = blockFamily({
    name: "llama3",
    reasoning: undefined,
    toolBlocks: [
        { open: "{", close: undefined, atAnswerStart: true, openInBody: true, stillPossible: couldBeJsonCall, parse: parseJsonCalls },
        { open: PYTHON_TAG, close: undefined, parse: parsePythonTag }
    ],
    toolCalls: async ({ parallel, tools }, rules) => [
        `maple-calls ::= ${parallel ? `call-maple-json ( ${gbnfLiteral("\n")} call-maple-json )*` : "call-maple-json"}`,
        await rules(llamaCallSchema(tools), "call-")
    ],
    preservedTokens: [PYTHON_TAG],
    // No reasoning switch: Llama 3 does not reason.
    reasoningVariables: () => ({}),
    // Its template raises on a turn of several calls.
    templateMessages: (messages, template) => toTemplateMessages(oneCallPerTurn(messages), template.includes("developer"))
});

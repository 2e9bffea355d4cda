import type { ParsedToolCall } from "../toolCallBody.js";
import type { ToolDefinition } from "../types.js";
import { blockFamily } from "./blockFamily.js";
import type { ChatFormat } from "./chatFormat.js";
import { THINK_CLOSE, THINK_OPEN, thinkBlock, TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from "./hermes.js";
import { argumentsObject, xmlCallRules, type XmlArgumentSyntax } from "./xmlArguments.js";

/**
 * Qwen3-Coder's XML tool calls (also Qwen3.5's, Nemotron 3 Nano's and StepFun 3.5 Flash's):
 *
 *     <tool_call>
 *     <function=get_weather>
 *     <parameter=city>
 *     Lagos
 *     </parameter>
 *     </function>
 *     </tool_call>
 *
 * with reasoning, for the models that have it, in Qwen's `<think>…</think>`. A value is the text
 * between `<parameter=NAME>\n` and `\n</parameter>` (one newline each side is the layout, as the
 * template writes it and llama.cpp's parser reads it), read into JSON by the parameter's schema
 * (`xmlArguments.ts`). Uncertain: llama.cpp also accepts a Qwen3-Coder call that leaves out its
 * `<tool_call>` wrapper (`<function=NAME>` alone); Maple does not (such text stays content).
 */

const FUNCTION_OPEN = "<function=";
const FUNCTION_CLOSE = "</function>";
const PARAMETER_OPEN = "<parameter=";
const PARAMETER_CLOSE = "</parameter>";

const argumentSyntax: XmlArgumentSyntax = {
    open: (name) => `${PARAMETER_OPEN}${name}>\n`,
    close: `\n${PARAMETER_CLOSE}`,
    separator: "\n"
};

/** The calls in a `<tool_call>` block's body: one `<function=NAME>` (or more), each of `<parameter=K>` values; undefined when it is not that. */
export function parseFunctionCalls(body: string, tools: readonly ToolDefinition[]): ParsedToolCall[] | undefined {
    const calls: ParsedToolCall[] = [];
    let at = skipSpace(body, 0);
    while (at < body.length) {
        if (!body.startsWith(FUNCTION_OPEN, at)) return undefined;
        const nameEnd = body.indexOf(">", at);
        if (nameEnd < 0) return undefined;
        const name = body.slice(at + FUNCTION_OPEN.length, nameEnd).trim();
        if (name === "" || name.includes("\n")) return undefined;
        const values: [string, string][] = [];
        at = skipSpace(body, nameEnd + 1);
        while (!body.startsWith(FUNCTION_CLOSE, at)) {
            if (!body.startsWith(PARAMETER_OPEN, at)) return undefined;
            const keyEnd = body.indexOf(">", at);
            const valueEnd = body.indexOf(PARAMETER_CLOSE, keyEnd);
            if (keyEnd < 0 || valueEnd < 0) return undefined;
            const key = body.slice(at + PARAMETER_OPEN.length, keyEnd).trim();
            values.push([key, body.slice(keyEnd + 1, valueEnd).replace(/^\n/, "").replace(/\n$/, "")]);
            at = skipSpace(body, valueEnd + PARAMETER_CLOSE.length);
        }
        calls.push(argumentsObject(name, values, tools));
        at = skipSpace(body, at + FUNCTION_CLOSE.length);
    }
    return calls.length === 0 ? undefined : calls;
}

function skipSpace(text: string, at: number): number {
    while (at < text.length && /\s/.test(text[at]!)) at += 1;
    return at;
}

export const qwen3CoderFormat: ChatFormat = blockFamily({
    name: "qwen3-coder",
    reasoning: thinkBlock,
    toolBlocks: [{ open: TOOL_CALL_OPEN, close: TOOL_CALL_CLOSE, parse: parseFunctionCalls }],
    // The template's layout: each call's block on its own lines.
    toolCalls: (constraint, rules) => xmlCallRules(constraint, rules, argumentSyntax,
        (name) => [`${TOOL_CALL_OPEN}\n${FUNCTION_OPEN}${name}>\n`, `${FUNCTION_CLOSE}\n${TOOL_CALL_CLOSE}`]),
    preservedTokens: [THINK_OPEN, THINK_CLOSE, TOOL_CALL_OPEN, TOOL_CALL_CLOSE]
});

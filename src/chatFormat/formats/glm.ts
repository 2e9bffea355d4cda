import type { ParsedToolCall } from "../toolCallBody.js";
import type { ToolDefinition } from "../types.js";
import { blockFamily } from "./blockFamily.js";
import type { ChatFormat } from "./chatFormat.js";
import { THINK_CLOSE, THINK_OPEN, thinkBlock, TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from "./hermes.js";
import { argumentsObject, xmlCallRules, type XmlArgumentSyntax } from "./xmlArguments.js";

/**
 * GLM-4.5 / 4.6 / 4.7 (Zhipu): reasoning in `<think>…</think>` (the model opens it; the template's
 * `enable_thinking: false` writes an empty one), tool calls as
 *
 *     <tool_call>get_weather
 *     <arg_key>city</arg_key>
 *     <arg_value>Lagos</arg_value>
 *     </tool_call>
 *
 * each value read by its parameter's schema (`xmlArguments.ts`; the template writes strings as
 * they are and other values as JSON). Followed: the template and llama.cpp's GLM-4.5 parser
 * (`common_chat_parse_glm_4_5`, an XML tool-call form with `<arg_key>` / `<arg_value>`).
 */

const ARG_KEY_OPEN = "<arg_key>";
const ARG_KEY_CLOSE = "</arg_key>";
const ARG_VALUE_OPEN = "<arg_value>";
const ARG_VALUE_CLOSE = "</arg_value>";

const argumentSyntax: XmlArgumentSyntax = {
    open: (name) => `\n${ARG_KEY_OPEN}${name}${ARG_KEY_CLOSE}\n${ARG_VALUE_OPEN}`,
    close: ARG_VALUE_CLOSE,
    separator: ""
};

/** A `<tool_call>` block's body: the name, then `<arg_key>K</arg_key><arg_value>V</arg_value>` pairs; undefined when it is not that. */
export function parseGlmCall(body: string, tools: readonly ToolDefinition[]): ParsedToolCall[] | undefined {
    const keyAt = body.indexOf(ARG_KEY_OPEN);
    const name = (keyAt < 0 ? body : body.slice(0, keyAt)).trim();
    if (name === "" || /\s|</.test(name)) return undefined;
    const values: [string, string][] = [];
    let rest = keyAt < 0 ? "" : body.slice(keyAt);
    const pair = /^\s*<arg_key>([\s\S]*?)<\/arg_key>\s*<arg_value>([\s\S]*?)<\/arg_value>/;
    while (rest.trim() !== "") {
        const match = pair.exec(rest);
        if (match === null) return undefined;
        values.push([match[1]!.trim(), match[2]!]);
        rest = rest.slice(match[0].length);
    }
    return [argumentsObject(name, values, tools)];
}

export const glmFormat: ChatFormat = blockFamily({
    name: "glm4.5",
    reasoning: thinkBlock,
    toolBlocks: [{ open: TOOL_CALL_OPEN, close: TOOL_CALL_CLOSE, parse: parseGlmCall }],
    // The template's layout: each call on lines of its own, calls separated by a newline.
    toolCalls: (constraint, rules) => xmlCallRules(constraint, rules, argumentSyntax, (name) => [`${TOOL_CALL_OPEN}${name}`, `\n${TOOL_CALL_CLOSE}`]),
    preservedTokens: [THINK_OPEN, THINK_CLOSE, TOOL_CALL_OPEN, TOOL_CALL_CLOSE, ARG_KEY_OPEN, ARG_KEY_CLOSE, ARG_VALUE_OPEN, ARG_VALUE_CLOSE]
});

import { gbnfLiteral } from "../../grammar/answerGrammar.js";
import { toolCallGrammarSchema } from "../../grammar/jsonSchemaSubset.js";
import { parseToolCallBody } from "../toolCallBody.js";
import { blockFamily } from "./blockFamily.js";
import type { ChatFormat } from "./chatFormat.js";

/**
 * Hermes / Qwen3: reasoning in `<think>…</think>`, tool calls as
 * `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>` blocks in the answer. Qwen2.5 and
 * Qwen3, NousResearch's Hermes 2 Pro / 3, maple-preview and the ChatML fallback write it; it is
 * also what a template Maple does not recognise gets (what Maple read before it knew any other).
 */

/** Opens a reasoning block. */
export const THINK_OPEN = "<think>";
/** Closes a reasoning block; what follows is the answer. */
export const THINK_CLOSE = "</think>";
/** Opens a tool call whose body is `{"name": …, "arguments": {…}}`. */
export const TOOL_CALL_OPEN = "<tool_call>";
/** Closes a tool call. */
export const TOOL_CALL_CLOSE = "</tool_call>";

/** Qwen's reasoning block. */
export const thinkBlock = { open: THINK_OPEN, close: THINK_CLOSE };

/**
 * Whether the rendered prompt leaves generation inside an open `<think>` block, i.e. the prompt
 * ends with `<think>` (and possibly whitespace): Maple's template and the Qwen3-2507 thinking
 * models do that; stock Qwen3 leaves the model to open it, and `enable_thinking: false` closes it
 * in the prompt.
 */
export function promptEndsInsideThink(prompt: string): boolean {
    return prompt.trimEnd().endsWith(THINK_OPEN);
}

export const hermesFormat: ChatFormat = blockFamily({
    name: "hermes",
    reasoning: thinkBlock,
    toolBlocks: [{
        open: TOOL_CALL_OPEN,
        close: TOOL_CALL_CLOSE,
        parse: (body) => {
            const call = parseToolCallBody(body);
            return call === undefined ? undefined : [call];
        }
    }],
    toolCalls: async ({ tools, parallel }, rules) => [
        // Qwen3's and Hermes' layout: each call on its own lines, calls separated by a newline.
        `maple-calls ::= ${parallel ? 'maple-call ( "\\n" maple-call )*' : "maple-call"}`,
        `maple-call ::= ${gbnfLiteral(`${TOOL_CALL_OPEN}\n`)} call-maple-json ${gbnfLiteral(`\n${TOOL_CALL_CLOSE}`)}`,
        await rules(toolCallGrammarSchema(tools), "call-")
    ],
    // Plain added tokens in Qwen's vocabularies; special ones in some Llama-based Hermes GGUFs.
    preservedTokens: [THINK_OPEN, THINK_CLOSE, TOOL_CALL_OPEN, TOOL_CALL_CLOSE]
});

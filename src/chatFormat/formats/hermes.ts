import { gbnfLiteral, type FormatGrammar } from "../../grammar/answerGrammar.js";
import { toolCallGrammarSchema } from "../../grammar/jsonSchemaSubset.js";
import { MarkerOutputParser, type MarkerSyntax } from "../outputParser.js";
import { toTemplateMessages, toTemplateTools } from "../templateMessages.js";
import { parseToolCallBody } from "../toolCallBody.js";
import type { ReasoningSwitch } from "../types.js";
import type { ChatFormat, PromptStart } from "./chatFormat.js";

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

/**
 * Whether the rendered prompt leaves generation inside an open `<think>` block, i.e. the prompt
 * ends with `<think>` (and possibly whitespace): Maple's template and the Qwen3-2507 thinking
 * models do that; stock Qwen3 leaves the model to open it, and `enable_thinking: false` closes it
 * in the prompt.
 */
export function promptEndsInsideThink(prompt: string): boolean {
    return prompt.trimEnd().endsWith(THINK_OPEN);
}

/**
 * How a `<think>` family's output starts: inside reasoning when the prompt opened the block; the
 * model may open it itself unless the prompt already closed one (`enable_thinking: false` renders
 * `<think>\n\n</think>\n\n`).
 */
export function thinkPromptStart(prompt: string, open = THINK_OPEN, close = THINK_CLOSE): PromptStart {
    const end = prompt.trimEnd();
    const startsInReasoning = end.endsWith(open);
    return { startsInReasoning, mayOpenReasoning: !startsInReasoning && !end.endsWith(close) };
}

/**
 * The grammar pieces of a family whose reasoning is a `<think>`-style block before the answer:
 * after the model's own closing marker a little whitespace (models write "\n\n" there, which the
 * parser drops; bounded, so a random model cannot loop on it), and the JSON answer bare.
 */
export function thinkBlockGrammar(reasoning: { open: string; close: string }, toolCalls: FormatGrammar["toolCalls"]): FormatGrammar {
    return {
        reasoningOpen: reasoning.open,
        afterReasoning: "[ \\t\\n]{0,4}",
        jsonAnswer: (json) => json,
        toolCalls,
        closeReasoning: `\n${reasoning.close}\n\n`
    };
}

const syntax: MarkerSyntax = {
    reasoning: { open: THINK_OPEN, close: THINK_CLOSE },
    toolBlocks: [{
        open: TOOL_CALL_OPEN,
        close: TOOL_CALL_CLOSE,
        parse: (body) => {
            const call = parseToolCallBody(body);
            return call === undefined ? undefined : [call];
        }
    }]
};

/**
 * Qwen3's switch, `enable_thinking` (also GLM-4.5's, SmolLM3's and Maple's): on or off, no
 * levels (an effort turns it on).
 */
export function enableThinkingVariables(reasoning: ReasoningSwitch | undefined): Record<string, unknown> {
    return reasoning === undefined ? {} : { enable_thinking: reasoning.enabled };
}

export const hermesFormat: ChatFormat = {
    name: "hermes",
    // Plain added tokens in Qwen's vocabularies; special ones in some Llama-based Hermes GGUFs.
    preservedTokens: [THINK_OPEN, THINK_CLOSE, TOOL_CALL_OPEN, TOOL_CALL_CLOSE],
    grammar: thinkBlockGrammar(syntax.reasoning!, async ({ tools, parallel }, rules) => [
        // Qwen3's and Hermes' layout: each call on its own lines, calls separated by a newline.
        `maple-calls ::= ${parallel ? 'maple-call ( "\\n" maple-call )*' : "maple-call"}`,
        `maple-call ::= ${gbnfLiteral(`${TOOL_CALL_OPEN}\n`)} call-maple-json ${gbnfLiteral(`\n${TOOL_CALL_CLOSE}`)}`,
        await rules(toolCallGrammarSchema(tools), "call-")
    ]),
    reasoningVariables: enableThinkingVariables,
    templateMessages: (messages, template) => toTemplateMessages(messages, template.includes("developer")),
    templateTools: toTemplateTools,
    readPrompt: (prompt) => thinkPromptStart(prompt),
    createParser: (options) => new MarkerOutputParser(syntax, options)
};

import type { FormatGrammar } from "../../grammar/answerGrammar.js";
import { MarkerOutputParser, type ToolBlock } from "../outputParser.js";
import { toTemplateMessages, toTemplateTools } from "../templateMessages.js";
import type { ReasoningSwitch } from "../types.js";
import type { ChatFormat, PromptStart } from "./chatFormat.js";

/**
 * The families that reason in one block before the answer (`<think>…</think>`, `[THINK]…[/THINK]`)
 * and write tool calls as delimited blocks in the answer: Hermes/Qwen3, Qwen3-Coder, DeepSeek,
 * GLM, Mistral, Llama 3 (no reasoning). Each is one call of `blockFamily` with its markers; what
 * differs is the body of a call and its grammar.
 */
export interface BlockFamily {
    name: string;
    /** The reasoning block's markers; undefined: the family has none. */
    reasoning: { open: string; close: string } | undefined;
    toolBlocks: readonly ToolBlock[];
    /** The grammar of the calls (rules defining `maple-calls`). */
    toolCalls: FormatGrammar["toolCalls"];
    /** Markers a real model writes as special tokens (see `ChatFormat.preservedTokens`). */
    preservedTokens: readonly string[];
    /** The template's reasoning variables (default: `enable_thinking`). */
    reasoningVariables?: ChatFormat["reasoningVariables"];
    /** The conversation as the template reads it (default: the OpenAI shape, `toTemplateMessages`). */
    templateMessages?: ChatFormat["templateMessages"];
    /** The JSON answer (default: bare). */
    jsonAnswer?: FormatGrammar["jsonAnswer"];
}

/**
 * Qwen3's switch, `enable_thinking` (also GLM-4.5's, SmolLM3's and Maple's): on or off, no
 * levels (an effort turns it on).
 */
export function enableThinkingVariables(reasoning: ReasoningSwitch | undefined): Record<string, unknown> {
    return reasoning === undefined ? {} : { enable_thinking: reasoning.enabled };
}

/**
 * How a block family's output starts: inside reasoning when the prompt opened the block; the model
 * may open it itself unless the prompt already closed one (Qwen3's `enable_thinking: false`
 * renders `<think>\n\n</think>\n\n`), or the family has none.
 */
export function blockPromptStart(prompt: string, reasoning: BlockFamily["reasoning"]): PromptStart {
    if (reasoning === undefined) return { startsInReasoning: false, mayOpenReasoning: false };
    const end = prompt.trimEnd();
    const startsInReasoning = end.endsWith(reasoning.open);
    return { startsInReasoning, mayOpenReasoning: !startsInReasoning && !end.endsWith(reasoning.close) };
}

export function blockFamily(family: BlockFamily): ChatFormat {
    const { reasoning } = family;
    const syntax = { reasoning, toolBlocks: family.toolBlocks };
    return {
        name: family.name,
        preservedTokens: family.preservedTokens,
        grammar: {
            reasoningOpen: reasoning?.open,
            // Models write "\n\n" after their reasoning (the parser drops it); bounded, so a random model cannot loop on it.
            afterReasoning: "[ \\t\\n]{0,4}",
            jsonAnswer: family.jsonAnswer ?? ((json) => json),
            toolCalls: family.toolCalls,
            closeReasoning: reasoning === undefined ? undefined : `\n${reasoning.close}\n\n`
        },
        reasoningVariables: family.reasoningVariables ?? enableThinkingVariables,
        templateMessages: family.templateMessages ?? ((messages, template) => toTemplateMessages(messages, template.includes("developer"))),
        templateTools: toTemplateTools,
        readPrompt: (prompt) => blockPromptStart(prompt, reasoning),
        createParser: (options) => new MarkerOutputParser(syntax, options)
    };
}

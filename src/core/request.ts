import type { ChatMessage, ReasoningSwitch, ToolChoice, ToolDefinition } from "../chatFormat/types.js";
import type { SamplingOptions } from "../engine/types.js";
import type { AnswerConstraint } from "../grammar/answerGrammar.js";

/**
 * The internal request: what every wire format's converter produces (camelCase, validated,
 * defaults applied). Nothing here is any wire format's name or shape.
 */

/** What every generation asks for, whatever its prompt. */
export interface GenerationSettings {
    /** Temperature, top-k/p, min-p, penalties, `seed`, logit bias, ignore-EOS. */
    sampling: SamplingOptions;
    /** Tokens to generate at most, per choice. */
    maxTokens: number;
    /** Stop strings over the raw output; the matched one and all after it are cut. */
    stop: string[];
    /** Choices to generate side by side (OpenAI's `n`); at most the server's slots. */
    n: number;
    /** Each generated token's logprob and its `top` alternatives; undefined: none. */
    logprobs: { top: number } | undefined;
    /** Maple's `grammar` extension: GBNF constraining the whole output (reasoning included). */
    grammar: string | undefined;
    /**
     * The conversation this request continues (`conversationKey` in `wire/conversationKey.ts`,
     * which every wire parser calls): a hint for slot and prompt-cache affinity, never a reason to
     * serve other tokens than the prompt's. Undefined: none. Required, so no parser can forget it.
     */
    cacheKey: string | undefined;
}

/** A conversation to answer through the model's chat template, with reasoning and tool calls parsed out. */
export interface ChatGenerationRequest extends GenerationSettings {
    messages: ChatMessage[];
    /** The tools the template is shown, after the tool choice (none → [], a named one → that one). */
    tools: ToolDefinition[];
    toolChoice: ToolChoice;
    /**
     * The model may call several tools in one turn (OpenAI's `parallel_tool_calls`, Anthropic's
     * `disable_parallel_tool_use` negated; true when the wire has no such field).
     */
    parallelToolCalls: boolean;
    /** Template variables (`enable_thinking`, …): OpenAI's `chat_template_kwargs`; they win over `reasoning`'s. */
    templateKwargs: Record<string, unknown>;
    /**
     * Reason or not, and how hard: the wire's reasoning field through the wire kit's
     * `reasoningSwitch` (undefined: the template's default). The model's chat format turns it into
     * its template's variables (`enable_thinking`, `reasoning_effort`, …).
     */
    reasoning: ReasoningSwitch | undefined;
    /** false: reasoning is generated and counted but yields no `reasoning-delta` parts (nor those tokens' logprobs). */
    includeReasoning: boolean;
    /**
     * What the grammar enforces on the answer only (the think block stays free): a JSON value, tool
     * calls, or either; built by `answerConstraint` from the wire's JSON format and tool choice.
     */
    answer: AnswerConstraint | undefined;
    /**
     * The most tokens the model may generate inside its think block (Anthropic's
     * `thinking.budget_tokens`): once spent, a grammar makes it write `</think>` (see
     * `grammar/thinkingBudget.ts`). Undefined: no limit but `maxTokens`. Not applied with `grammar`,
     * which decides the whole output itself.
     */
    thinkingBudget?: number;
}

/** A raw prompt, continued as it is: no template, no parsing (OpenAI's legacy completions). */
export interface CompletionGenerationRequest extends GenerationSettings {
    /** Text to tokenize (special-token text parsed, BOS added as the model wants), or token ids. */
    prompt: { text: string } | { tokens: number[] };
}

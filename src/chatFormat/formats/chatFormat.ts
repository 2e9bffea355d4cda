import type { AnswerConstraint, FormatGrammar, ToolCallsConstraint } from "../../grammar/answerGrammar.js";
import type { TemplateMessage, TemplateTool } from "../templateMessages.js";
import type { ChatMessage, OutputPart, ReasoningSwitch, ToolDefinition } from "../types.js";

/**
 * A model family's chat format: everything Maple must know about how that family writes reasoning
 * and tool calls, in one object, so that the prompt side, the output parser and the grammar can
 * never disagree. One per family (`hermes.ts`, …); which one a model gets is decided once, when it
 * loads (`detect.ts`, or `--chat-format`).
 */
export interface ChatFormat {
    /** What `--chat-format` takes and `/health` reports. */
    readonly name: string;
    /**
     * The family's markers that a real model writes as special tokens (gpt-oss's `<|channel|>`,
     * Mistral's `[TOOL_CALLS]`), which a detokenizer leaves out: they must reach the output parser
     * as text (llama-server's `preserved_tokens`). Markers that are plain text in the served
     * model's vocabulary are left alone.
     */
    readonly preservedTokens: readonly string[];
    /** The grammar pieces that enforce an answer (tool calls, JSON) in this family's syntax. */
    readonly grammar: FormatGrammar;
    /**
     * The template variables that carry a reasoning switch (Qwen3: `enable_thinking`), under the
     * request's own `chat_template_kwargs`. Undefined switch: none (the template's default).
     */
    reasoningVariables(reasoning: ReasoningSwitch | undefined): Record<string, unknown>;
    /**
     * The conversation as this family's template reads it: history tool calls, tool results and
     * reasoning in the shape its template renders back into the family's own tokens. `tools`: the
     * tools offered (the generic format tells the model about them in a message).
     */
    templateMessages(messages: readonly ChatMessage[], template: string, tools: readonly ToolDefinition[]): TemplateMessage[];
    /** The tools as this family's template reads them (`toTemplateTools`, the OpenAI shape, for most). */
    templateTools(tools: readonly ToolDefinition[]): TemplateTool[];
    /**
     * The constraint on an answer the request leaves free while tools are offered (tool choice
     * auto, no JSON answer, no `grammar` of the client's): absent for the families that mark their
     * calls inside free text; the generic format's answer is then its JSON envelope. `callable`:
     * the offered tools, their schemas as far as the grammar can enforce them.
     */
    freeAnswer?(callable: ToolCallsConstraint): AnswerConstraint;
    /** How the model's output begins after this rendered prompt. */
    readPrompt(prompt: string): PromptStart;
    /** A parser for one generation's output. */
    createParser(options: OutputParserOptions): OutputParser;
}

/** Where a rendered prompt leaves the model. */
export interface PromptStart {
    /** The prompt opened the reasoning block itself: the output starts as reasoning. */
    startsInReasoning: boolean;
    /**
     * The model may still open a reasoning block itself: not when the prompt left it inside one,
     * nor when the prompt already closed one (reasoning switched off by the template), nor for a
     * family without reasoning. The answer's grammar then allows that opening.
     */
    mayOpenReasoning: boolean;
}

/** How a parser should read one generation. */
export interface OutputParserOptions {
    /** The prompt left the model inside its reasoning block (see `PromptStart`). */
    startsInReasoning: boolean;
    /**
     * The tools offered to the model. Empty: nothing is parsed as a tool call (the family's tool
     * syntax is plain content). Formats whose arguments are not JSON read the values by the
     * parameters' schema.
     */
    tools: readonly ToolDefinition[];
}

/**
 * Splits a model's raw output, as it streams, into reasoning, content and tool calls. Pure and
 * incremental: `push` returns the parts decided so far and holds back anything that could still
 * turn into a marker; whatever the split of the text into `push` calls, the parts are the same.
 */
export interface OutputParser {
    /** Text pushed now would be reasoning: the generation counts the token as a reasoning token, and no answer grammar applies. */
    readonly inReasoning: boolean;
    /** Adds generated text; returns the parts it decides (possibly none). */
    push(text: string): OutputPart[];
    /** Ends the generation: decides and returns everything still held back. */
    flush(): OutputPart[];
}

import type { OutputParserOptions } from "./formats/chatFormat.js";
import { decidedLength, IncrementalParser, type PartList } from "./incrementalParser.js";
import type { ParsedToolCall } from "./toolCallBody.js";
import type { ToolDefinition } from "./types.js";

/**
 * The markers of a family that writes reasoning as one block before its answer and tool calls as
 * delimited blocks inside the answer (Qwen3/Hermes, DeepSeek, Mistral, GLM, Llama 3, …): all a
 * `MarkerOutputParser` needs to know about the family.
 */
export interface MarkerSyntax {
    /** The reasoning block's markers (`<think>`, `</think>`); undefined: the family writes no reasoning block. */
    reasoning: { open: string; close: string } | undefined;
    /** The kinds of tool-call block the answer may hold; where two open at one place, the first listed wins. */
    toolBlocks: readonly ToolBlock[];
}

/** One kind of tool-call block: how it opens and closes, and how its body becomes calls. */
export interface ToolBlock {
    /** The text that opens the block (`<tool_call>`). */
    open: string;
    /** The text that closes it; undefined: the block runs to the end of the output (Mistral's `[TOOL_CALLS]`). */
    close: string | undefined;
    /** A block still open when the output ends is read as if closed there (a model that ends its turn without the closing marker). */
    closedByEnd?: boolean;
    /** The block opens only at the very start of the answer (Llama 3's bare JSON call); elsewhere its opening is content. */
    atAnswerStart?: boolean;
    /** The opening text belongs to the body (Llama 3's `{`). */
    openInBody?: boolean;
    /**
     * While the block is open and unclosed: false once `body` can no longer be a call, so it is
     * released as content at once instead of held to the end of the output. Absent: always true.
     */
    stillPossible?(body: string): boolean;
    /** The calls of a whole block, or undefined when it is not one a client could run (the block then stays content, verbatim). */
    parse(body: string, tools: readonly ToolDefinition[]): ParsedToolCall[] | undefined;
}

/** Where the parser stands in the model's output. */
type Phase =
    /** Before the first non-whitespace text: the reasoning marker here opens reasoning. */
    | "start"
    /** Inside the reasoning block. */
    | "reasoning"
    /** After reasoning (or without any): content, and tool-call blocks when tools are on. */
    | "answer"
    /** Inside a tool-call block: held whole until the block closes. */
    | "toolCall";

/** What becomes of the whitespace at the start of a phase. */
type LeadingWhitespace =
    | "keep"
    /** After the reasoning markers: never part of the text. */
    | "drop"
    /** After a tool call: dropped before another call or the end, kept before text that follows. */
    | "dropUnlessTextFollows";

/**
 * Splits a model's raw output, as it streams, into reasoning, content and tool calls, by the
 * markers of its family (`MarkerSyntax`).
 *
 * Pure and incremental: `push` returns the parts that are decided so far and holds back any
 * suffix that could still turn into a marker (`</thi…`), plus the whitespace right before it,
 * because whitespace next to a marker is trimmed. Whatever the split of the text into `push`
 * calls, the concatenated parts are the same, and no marker or piece of one ever reaches a part
 * (except inside a block left as content because it is not a valid tool call).
 *
 * Conventions, and whose they are:
 * - Reasoning ends at the first closing marker; everything after is the answer, and an opening
 *   marker in the answer is plain content. That is vLLM's qwen3 reasoning parser (streaming: once
 *   `</think>` is seen, deltas are content). An opening marker at the very start of the output
 *   (leading whitespace allowed) opens reasoning (stock Qwen3) or, when the prompt already opened
 *   it, is dropped as redundant: both vLLM and llama-server do that. Elsewhere inside reasoning it
 *   is kept as text (llama-server; vLLM drops it).
 * - Whitespace follows llama-server (`common/chat-parser.cpp`, `try_parse_reasoning`): reasoning
 *   is trimmed at both ends and the whitespace after its closing marker is skipped, so the answer
 *   after `</think>\n\n` starts with its first real character. vLLM keeps both verbatim, which
 *   leaves answers starting with "\n\n".
 * - Tool-call blocks are recognised in the answer only (one inside reasoning is reasoning text),
 *   and only when tools were offered. Whitespace before a block, between blocks and after the last
 *   one is formatting, not content: it is dropped, so a reply that is only tool calls has no
 *   content. Whitespace between a block and text that follows it is kept. An invalid or unclosed
 *   block is kept as content, verbatim, with the whitespace before it.
 *
 * Stop strings are not handled here: they are applied to the raw text before this parser.
 */
export class MarkerOutputParser extends IncrementalParser {
    readonly #syntax: MarkerSyntax;
    readonly #options: OutputParserOptions;
    /** The opening markers searched for anywhere in the answer (not the answer-start-only ones). */
    readonly #openings: readonly string[];
    #phase: Phase = "start";
    #leadingWhitespace: LeadingWhitespace = "keep";
    /** The open tool-call block, while `#phase` is "toolCall". */
    #block: ToolBlock | undefined;
    /** Whitespace dropped before the open block, restored if the block turns out invalid. */
    #whitespaceBeforeBlock = "";
    /** Content or a tool call has been emitted: an answer-start-only block can no longer open. */
    #answerStarted = false;

    constructor(syntax: MarkerSyntax, options: OutputParserOptions) {
        super();
        this.#syntax = syntax;
        this.#options = { ...options };
        this.#openings = syntax.toolBlocks.filter((block) => block.atAnswerStart !== true).map((block) => block.open);
    }

    /**
     * Whether text pushed now would be reasoning (the model has not closed its reasoning block):
     * the generation counts a token as a reasoning token when this holds as the token arrives.
     */
    get inReasoning(): boolean {
        return this.#phase === "reasoning" || (this.#phase === "start" && this.#options.startsInReasoning && this.#syntax.reasoning !== undefined);
    }

    protected override drained(parts: PartList): void {
        this.#answerStarted ||= parts.answered;
    }

    protected step(parts: PartList, final: boolean): boolean {
        switch (this.#phase) {
            case "start":
                return this.#stepStart(final);
            case "reasoning":
                return this.#stepReasoning(parts, final);
            case "answer":
                return this.#stepAnswer(parts, final);
            case "toolCall":
                return this.#stepToolCall(parts, final);
        }
    }

    #enter(phase: Phase, leadingWhitespace: LeadingWhitespace): void {
        this.#phase = phase;
        this.#leadingWhitespace = leadingWhitespace;
    }

    #stepStart(final: boolean): boolean {
        const reasoning = this.#syntax.reasoning;
        if (reasoning !== undefined) {
            const text = this.pending.trimStart();
            if (text.startsWith(reasoning.open)) {
                this.pending = text.slice(reasoning.open.length);
                this.#enter("reasoning", "drop");
                return true;
            }
            if (!final && reasoning.open.startsWith(text)) return false;
        }
        // Not a reasoning block: the leading whitespace stays part of the answer, untouched.
        const startsInReasoning = this.#options.startsInReasoning && reasoning !== undefined;
        this.#enter(startsInReasoning ? "reasoning" : "answer", startsInReasoning ? "drop" : "keep");
        return true;
    }

    #stepReasoning(parts: PartList, final: boolean): boolean {
        if (!this.#settleLeadingWhitespace(final)) return false;
        const close = this.#syntax.reasoning!.close;
        const end = this.pending.indexOf(close);
        if (end >= 0) {
            parts.addText("reasoning", this.pending.slice(0, end).trimEnd());
            this.pending = this.pending.slice(end + close.length);
            this.#enter("answer", "drop");
            return true;
        }
        if (final) {
            // Cut off mid-thought: all of it is reasoning (trimmed like a closed block).
            parts.addText("reasoning", this.pending.trimEnd());
            this.pending = "";
        } else {
            this.#release(parts, "reasoning", decidedLength(this.pending, [close], true));
        }
        return false;
    }

    #stepAnswer(parts: PartList, final: boolean): boolean {
        if (!this.#settleLeadingWhitespace(final)) return false;
        if (this.#options.tools.length === 0 || this.#syntax.toolBlocks.length === 0) {
            this.#release(parts, "content", final ? this.pending.length : decidedLength(this.pending, [], false));
            return false;
        }
        const found = this.#findBlock(this.#answerStarted || parts.answered, final);
        if (found === "undecided") return false;
        if (found !== undefined) {
            const before = this.pending.slice(0, found.at);
            const text = before.trimEnd();
            parts.addText("content", text);
            this.#whitespaceBeforeBlock = before.slice(text.length);
            this.pending = this.pending.slice(found.at + (found.block.openInBody === true ? 0 : found.block.open.length));
            this.#block = found.block;
            this.#enter("toolCall", "keep");
            return true;
        }
        this.#release(parts, "content", final ? this.pending.length : decidedLength(this.pending, this.#openings, true));
        return false;
    }

    /**
     * The first block opening in the pending text; "undecided" while an answer-start-only block
     * may still open (only whitespace, or a piece of its opening, has arrived).
     */
    #findBlock(answerStarted: boolean, final: boolean): { block: ToolBlock; at: number } | "undecided" | undefined {
        let found: { block: ToolBlock; at: number } | undefined;
        for (const block of this.#syntax.toolBlocks) {
            let at: number;
            if (block.atAnswerStart === true) {
                if (answerStarted) continue;
                const text = this.pending.trimStart();
                at = this.pending.length - text.length;
                if (!text.startsWith(block.open)) {
                    if (!final && block.open.startsWith(text)) return "undecided";
                    continue;
                }
            } else {
                at = this.pending.indexOf(block.open);
                if (at < 0) continue;
            }
            if (found === undefined || at < found.at) found = { block, at };
        }
        return found;
    }

    #stepToolCall(parts: PartList, final: boolean): boolean {
        const block = this.#block!;
        const opening = block.openInBody === true ? "" : block.open;
        const close = block.close === undefined ? -1 : this.pending.indexOf(block.close);
        if (close < 0) {
            const possible = block.stillPossible?.(this.pending) ?? true;
            if (final && (block.close === undefined || block.closedByEnd === true) && possible) {
                return this.#endBlock(parts, this.pending, "");
            }
            if (final || !possible) {
                // Unclosed at the end of generation, or no call after all: the client sees the text.
                parts.addText("content", this.#whitespaceBeforeBlock + opening);
                this.#whitespaceBeforeBlock = "";
                this.#answerStarted = true;
                this.#enter("answer", "keep");
                return true;
            }
            return false;
        }
        return this.#endBlock(parts, this.pending.slice(0, close), block.close!);
    }

    /** The block's whole body has arrived: its calls, or the block kept as content. */
    #endBlock(parts: PartList, body: string, close: string): boolean {
        const block = this.#block!;
        this.pending = this.pending.slice(body.length + close.length);
        const calls = block.parse(body, this.#options.tools);
        if (calls === undefined || calls.length === 0) {
            const opening = block.openInBody === true ? "" : block.open;
            parts.addText("content", this.#whitespaceBeforeBlock + opening + body + close);
            this.#enter("answer", "keep");
        } else {
            for (const call of calls) parts.addToolCall(call);
            this.#enter("answer", "dropUnlessTextFollows");
        }
        this.#whitespaceBeforeBlock = "";
        this.#block = undefined;
        this.#answerStarted = true;
        return true;
    }

    /**
     * Applies the phase's leading-whitespace rule; false while only whitespace has arrived, so
     * the phase cannot go on yet.
     */
    #settleLeadingWhitespace(final: boolean): boolean {
        if (this.#leadingWhitespace === "keep") return true;
        if (this.#leadingWhitespace === "drop") this.pending = this.pending.trimStart();
        if (this.pending.trim() === "") {
            if (final) this.pending = "";
            return false;
        }
        // Text follows: "dropUnlessTextFollows" keeps the whitespace before it; a block opening
        // right after it still trims it, as whitespace before any block.
        this.#leadingWhitespace = "keep";
        return true;
    }

    #release(parts: PartList, type: "reasoning" | "content", length: number): void {
        parts.addText(type, this.pending.slice(0, length));
        this.pending = this.pending.slice(length);
    }
}

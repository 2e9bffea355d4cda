import { THINK_CLOSE, THINK_OPEN, TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from "./markers.js";
import { parseToolCallBody, type ParsedToolCall } from "./toolCallBody.js";
import type { OutputPart } from "./types.js";

/** How the parser should read one generation. */
export interface OutputParserOptions {
    /**
     * true when the rendered prompt ends inside an open `<think>` block (Maple's template ends the
     * generation prompt with `"<think>\n"`): output starts as reasoning, and a `</think>` ends it.
     * When false, the output is the answer unless it opens `<think>` itself (stock Qwen3).
     * See `promptEndsInsideThink` in `template.ts`.
     */
    startsInReasoning: boolean;
    /** false when no tools were offered: `<tool_call>` is then plain content. */
    parseToolCalls: boolean;
}

/** Where the parser stands in the model's output. */
type Phase =
    /** Before the first non-whitespace text: a `<think>` here opens reasoning. */
    | "start"
    /** Inside `<think>…</think>`. */
    | "reasoning"
    /** After reasoning (or without any): content, and `<tool_call>` blocks when tools are on. */
    | "answer"
    /** Inside `<tool_call>…</tool_call>`: held whole until the block closes. */
    | "toolCall";

/** What becomes of the whitespace at the start of a phase. */
type LeadingWhitespace =
    | "keep"
    /** After `<think>` / `</think>`: never part of the text. */
    | "drop"
    /** After a tool call: dropped before another call or the end, kept before text that follows. */
    | "dropUnlessTextFollows";

/**
 * Splits a model's raw output, as it streams, into reasoning, content and tool calls.
 *
 * Pure and incremental: `push` returns the parts that are decided so far and holds back any
 * suffix that could still turn into a marker (`</thi…`), plus the whitespace right before it,
 * because whitespace next to a marker is trimmed. Whatever the split of the text into `push`
 * calls, the concatenated parts are the same, and no marker or piece of one ever reaches a part
 * (except inside a block left as content because it is not a valid tool call).
 *
 * Conventions, and whose they are:
 * - Reasoning ends at the first `</think>`; everything after is the answer, and a `<think>` in
 *   the answer is plain content. That is vLLM's qwen3 reasoning parser (streaming: once
 *   `</think>` is seen, deltas are content). A `<think>` at the very start of the output (leading
 *   whitespace allowed) opens reasoning (stock Qwen3) or, when the prompt already opened it, is
 *   dropped as redundant: both vLLM and llama-server do that. Elsewhere inside reasoning it is
 *   kept as text (llama-server; vLLM drops it).
 * - Whitespace follows llama-server (`common/chat-parser.cpp`, `try_parse_reasoning`): reasoning
 *   is trimmed at both ends and the whitespace after `</think>` is skipped, so the answer after
 *   `</think>\n\n` starts with its first real character. vLLM keeps both verbatim, which leaves
 *   answers starting with "\n\n".
 * - Tool calls are the Hermes/Qwen3 `<tool_call>{json}</tool_call>` blocks, recognised in the
 *   answer only (one inside reasoning is reasoning text). Whitespace before a block, between
 *   blocks and after the last one is formatting, not content: it is dropped, so a reply that is
 *   only tool calls has no content. Whitespace between a block and text that follows it is kept.
 *   An invalid or unclosed block is kept as content, verbatim, with the whitespace before it.
 *
 * Stop strings are not handled here: they are applied to the raw text before this parser.
 */
export class ChatOutputParser {
    readonly #options: OutputParserOptions;
    #phase: Phase = "start";
    /** Text received but not yet decided. */
    #pending = "";
    #leadingWhitespace: LeadingWhitespace = "keep";
    /** Whitespace dropped before the open `<tool_call>`, restored if the block turns out invalid. */
    #whitespaceBeforeBlock = "";
    #flushed = false;

    constructor(options: OutputParserOptions) {
        this.#options = { ...options };
    }

    /**
     * Whether text pushed now would be reasoning (the model has not closed its think block):
     * the route counts a token as a reasoning token when this holds as the token arrives.
     */
    get inReasoning(): boolean {
        return this.#phase === "reasoning" || (this.#phase === "start" && this.#options.startsInReasoning);
    }

    /** Adds generated text; returns the parts it decides (possibly none). */
    push(text: string): OutputPart[] {
        if (this.#flushed) throw new Error("ChatOutputParser.push called after flush");
        this.#pending += text;
        return this.#drain(false);
    }

    /** Ends the generation: decides and returns everything still held back. */
    flush(): OutputPart[] {
        if (this.#flushed) return [];
        const parts = this.#drain(true);
        this.#flushed = true;
        return parts;
    }

    #drain(final: boolean): OutputPart[] {
        const parts = new PartList();
        while (this.#step(parts, final)) {
            // the phase changed: let the new phase look at what is left
        }
        return parts.parts;
    }

    #step(parts: PartList, final: boolean): boolean {
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
        const text = this.#pending.trimStart();
        if (text.startsWith(THINK_OPEN)) {
            this.#pending = text.slice(THINK_OPEN.length);
            this.#enter("reasoning", "drop");
            return true;
        }
        if (!final && THINK_OPEN.startsWith(text)) return false;
        // Not a think block: the leading whitespace stays part of the answer, untouched.
        const reasoning = this.#options.startsInReasoning;
        this.#enter(reasoning ? "reasoning" : "answer", reasoning ? "drop" : "keep");
        return true;
    }

    #stepReasoning(parts: PartList, final: boolean): boolean {
        if (!this.#settleLeadingWhitespace(final)) return false;
        const end = this.#pending.indexOf(THINK_CLOSE);
        if (end >= 0) {
            parts.addText("reasoning", this.#pending.slice(0, end).trimEnd());
            this.#pending = this.#pending.slice(end + THINK_CLOSE.length);
            this.#enter("answer", "drop");
            return true;
        }
        if (final) {
            // Cut off mid-thought: all of it is reasoning (trimmed like a closed block).
            parts.addText("reasoning", this.#pending.trimEnd());
            this.#pending = "";
        } else {
            this.#release(parts, "reasoning", decidedLength(this.#pending, THINK_CLOSE));
        }
        return false;
    }

    #stepAnswer(parts: PartList, final: boolean): boolean {
        if (!this.#settleLeadingWhitespace(final)) return false;
        if (!this.#options.parseToolCalls) {
            this.#release(parts, "content", final ? this.#pending.length : decidedLength(this.#pending));
            return false;
        }
        const open = this.#pending.indexOf(TOOL_CALL_OPEN);
        if (open >= 0) {
            const before = this.#pending.slice(0, open);
            const text = before.trimEnd();
            parts.addText("content", text);
            this.#whitespaceBeforeBlock = before.slice(text.length);
            this.#pending = this.#pending.slice(open + TOOL_CALL_OPEN.length);
            this.#enter("toolCall", "keep");
            return true;
        }
        this.#release(parts, "content", final ? this.#pending.length : decidedLength(this.#pending, TOOL_CALL_OPEN));
        return false;
    }

    #stepToolCall(parts: PartList, final: boolean): boolean {
        const close = this.#pending.indexOf(TOOL_CALL_CLOSE);
        if (close < 0) {
            if (final) {
                // Unclosed at the end of generation: not a call, so the client sees the text.
                parts.addText("content", this.#whitespaceBeforeBlock + TOOL_CALL_OPEN + this.#pending);
                this.#pending = "";
            }
            return false;
        }
        const body = this.#pending.slice(0, close);
        this.#pending = this.#pending.slice(close + TOOL_CALL_CLOSE.length);
        const call = parseToolCallBody(body);
        if (call === undefined) {
            parts.addText("content", this.#whitespaceBeforeBlock + TOOL_CALL_OPEN + body + TOOL_CALL_CLOSE);
            this.#enter("answer", "keep");
        } else {
            parts.addToolCall(call);
            this.#enter("answer", "dropUnlessTextFollows");
        }
        this.#whitespaceBeforeBlock = "";
        return true;
    }

    /**
     * Applies the phase's leading-whitespace rule; false while only whitespace has arrived, so
     * the phase cannot go on yet.
     */
    #settleLeadingWhitespace(final: boolean): boolean {
        if (this.#leadingWhitespace === "keep") return true;
        if (this.#leadingWhitespace === "drop") this.#pending = this.#pending.trimStart();
        if (this.#pending.trim() === "") {
            if (final) this.#pending = "";
            return false;
        }
        // Text follows: "dropUnlessTextFollows" keeps the whitespace before it; a `<tool_call>`
        // right after it still trims it, as whitespace before any block.
        this.#leadingWhitespace = "keep";
        return true;
    }

    #release(parts: PartList, type: "reasoning" | "content", length: number): void {
        parts.addText(type, this.#pending.slice(0, length));
        this.#pending = this.#pending.slice(length);
    }
}

/**
 * How much of `text` can be emitted now: everything before the longest suffix that is a proper
 * prefix of `marker`, before the whitespace preceding that (trimmed if the marker completes), and
 * never ending between the two halves of a surrogate pair (a lone surrogate cannot be sent as
 * UTF-8).
 */
function decidedLength(text: string, marker?: string): number {
    let length = text.length;
    if (marker !== undefined) {
        for (let size = Math.min(marker.length - 1, text.length); size > 0; size--) {
            if (text.endsWith(marker.slice(0, size))) {
                length = text.length - size;
                break;
            }
        }
        while (length > 0 && /\s/.test(text.charAt(length - 1))) length--;
    }
    if (length > 0 && isHighSurrogate(text.charCodeAt(length - 1))) length--;
    return length;
}

function isHighSurrogate(code: number): boolean {
    return code >= 0xd800 && code <= 0xdbff;
}

/** The parts of one push/flush, with adjacent text of the same type merged and empty text skipped. */
class PartList {
    readonly parts: OutputPart[] = [];

    addText(type: "reasoning" | "content", text: string): void {
        if (text === "") return;
        const last = this.parts.at(-1);
        if (last !== undefined && last.type !== "tool_call" && last.type === type) last.text += text;
        else this.parts.push({ type, text });
    }

    addToolCall(call: ParsedToolCall): void {
        this.parts.push({ type: "tool_call", name: call.name, arguments: call.arguments });
    }
}

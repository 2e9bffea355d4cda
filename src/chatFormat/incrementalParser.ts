import type { OutputParser } from "./formats/chatFormat.js";
import type { ParsedToolCall } from "./toolCallBody.js";
import type { OutputPart } from "./types.js";

/**
 * What every chat format's output parser shares: text arrives by `push`, a step function decides
 * what it can (switching phases until nothing more can be decided), and `flush` decides the rest.
 * A subclass holds its phase and reads and consumes `pending`.
 */
export abstract class IncrementalParser implements OutputParser {
    /** Text received but not yet decided. */
    protected pending = "";
    #flushed = false;

    abstract get inReasoning(): boolean;

    push(text: string): OutputPart[] {
        if (this.#flushed) throw new Error(`${this.constructor.name}.push called after flush`);
        this.pending += text;
        return this.#drain(false);
    }

    flush(): OutputPart[] {
        if (this.#flushed) return [];
        const parts = this.#drain(true);
        this.#flushed = true;
        return parts;
    }

    /**
     * Decides what it can of `pending` in the current phase; true when the phase changed, so the
     * new phase must look at what is left. `final`: the output is over, decide everything.
     */
    protected abstract step(parts: PartList, final: boolean): boolean;

    /** Called with the parts of each push or flush, once decided. */
    protected drained(_parts: PartList): void {
        // nothing by default
    }

    #drain(final: boolean): OutputPart[] {
        const parts = new PartList();
        while (this.step(parts, final)) {
            // the phase changed: let the new phase look at what is left
        }
        this.drained(parts);
        return parts.parts;
    }
}

/** The parts of one push/flush, with adjacent text of the same type merged and empty text skipped. */
export class PartList {
    readonly parts: OutputPart[] = [];
    /** Content or a tool call is among the parts. */
    answered = false;

    addText(type: "reasoning" | "content", text: string): void {
        if (text === "") return;
        if (type === "content") this.answered = true;
        const last = this.parts.at(-1);
        if (last !== undefined && last.type !== "tool_call" && last.type === type) last.text += text;
        else this.parts.push({ type, text });
    }

    addToolCall(call: ParsedToolCall): void {
        this.answered = true;
        this.parts.push({ type: "tool_call", name: call.name, arguments: call.arguments });
    }
}

/**
 * How much of `text` can be emitted now: everything before the longest suffix that is a proper
 * prefix of one of `markers` (and, with `holdWhitespace`, before the whitespace preceding it,
 * since whitespace next to a marker is trimmed), never ending between the two halves of a
 * surrogate pair (a lone surrogate cannot be sent as UTF-8).
 */
export function decidedLength(text: string, markers: readonly string[], holdWhitespace: boolean): number {
    let length = text.length;
    for (const marker of markers) {
        for (let size = Math.min(marker.length - 1, text.length); size > 0; size--) {
            if (text.endsWith(marker.slice(0, size))) {
                length = Math.min(length, text.length - size);
                break;
            }
        }
    }
    if (holdWhitespace) {
        while (length > 0 && /\s/.test(text.charAt(length - 1))) length--;
    }
    const last = text.charCodeAt(length - 1);
    return length > 0 && last >= 0xd800 && last <= 0xdbff ? length - 1 : length;
}

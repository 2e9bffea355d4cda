import type { GenerationPart } from "../core/parts.js";

export type TextBlockKind = "reasoning" | "text";

/**
 * What one part does to a block-structured answer (Responses' output items, Anthropic's content
 * blocks). `index` numbers the blocks of the choice from 0, tool calls included.
 */
export type BlockStep =
    | { type: "start"; kind: TextBlockKind; index: number }
    | { type: "delta"; kind: TextBlockKind; index: number; text: string }
    /** `text`: the whole block's text. */
    | { type: "end"; kind: TextBlockKind; index: number; text: string }
    /** A tool call is a block of its own, whole when it arrives (no start or end step). */
    | { type: "tool-call"; index: number; name: string; arguments: string };

/**
 * The one place block starts and ends are derived from the core's parts (the ordering rules in
 * parts.ts): a reasoning or text block opens at its first non-empty delta and ends at the next
 * part of another kind, a tool call or `finish`. Writers map steps to their own events. Pure.
 *
 * Why a tracker and not start/end parts from the core: only two formats have blocks (chat,
 * completions and Ollama would skip such parts), and a writer must close the open block on a
 * failure or cancel, which never reaches the core's part stream, so it needs `close()` anyway.
 */
export class BlockTracker {
    private nextIndex = 0;
    private open: { kind: TextBlockKind; index: number; text: string } | undefined;

    /** The steps of one part; `finish` closes the open block (a logprobs part makes none). */
    step(part: GenerationPart): BlockStep[] {
        switch (part.type) {
            case "reasoning-delta":
                return this.delta("reasoning", part.text);
            case "text-delta":
                return this.delta("text", part.text);
            case "tool-call":
                return [...this.close(), { type: "tool-call", index: this.nextIndex++, name: part.name, arguments: part.arguments }];
            case "finish":
                return this.close();
            case "logprobs":
                return [];
        }
    }

    /** Ends the open block, if any (at `finish`, or when the stream fails or is cancelled). */
    close(): BlockStep[] {
        const open = this.open;
        if (open === undefined) return [];
        this.open = undefined;
        return [{ type: "end", kind: open.kind, index: open.index, text: open.text }];
    }

    private delta(kind: TextBlockKind, text: string): BlockStep[] {
        if (text === "") return [];
        const steps: BlockStep[] = [];
        if (this.open?.kind !== kind) {
            steps.push(...this.close());
            this.open = { kind, index: this.nextIndex++, text: "" };
            steps.push({ type: "start", kind, index: this.open.index });
        }
        this.open!.text += text;
        steps.push({ type: "delta", kind, index: this.open!.index, text });
        return steps;
    }
}

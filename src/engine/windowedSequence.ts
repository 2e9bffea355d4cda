import type { LlamaContextSequence } from "node-llama-cpp";

/** The internals this module reaches, as node-llama-cpp 3.22.1 declares them (dist/evaluator/LlamaContext/). */
interface Checkpoint {
    readonly minPos: number;
    readonly maxPos: number;
}
interface SequenceInternals {
    _sequenceId?: number;
    _contextTokens?: number[];
    _nextTokenIndex?: number;
    _checkpoints?: { _checkpoints?: [string | undefined, Checkpoint][]; pruneFromEndToIndex?: (index: number) => void };
    _context?: { _ctx?: {
        getSequenceKvCacheMinPosition?: (sequenceId: number) => number;
        restoreCheckpoint?: (checkpoint: Checkpoint, maxPosIndex: number, sequenceId: number) => Promise<boolean>;
    }; };
}

/**
 * A slot of a sliding-window model with llama.cpp's windowed cache (`swaFullCache: false`): a
 * sliding-window layer keeps only the cells its window and the last batch need, so the slot can
 * be cut back exactly only where those cells are still there, or to a context checkpoint
 * (`takeCheckpoint`: a copy of the sliding layers' cells at that point, node-llama-cpp 3.22.1).
 *
 * node-llama-cpp cuts a sequence by removing its cells whenever the cut lies past the oldest
 * sliding-window cell, even when the window before the cut reaches further back than that cell
 * (the next token would attend to fewer cells than it should); and it restores a checkpoint only
 * when the removal fails. So Maple decides the cut itself: `exactCut` says how far back a slot
 * can go exactly, and `cutTo` goes there by removing cells only when that is exact, else by
 * restoring a checkpoint that serves the cut (the same internal calls node-llama-cpp's
 * `eraseContextTokenRanges` makes). Re-check both when upgrading node-llama-cpp.
 */
export class WindowedSequence {
    constructor(private readonly sequence: LlamaContextSequence, private readonly window: number) {}

    private get internals(): SequenceInternals {
        return this.sequence as unknown as SequenceInternals;
    }

    /** The oldest position the sliding-window layers still hold (0 when they hold all). */
    private oldestCell(): number {
        const internals = this.internals;
        const minimum = internals._context?._ctx?.getSequenceKvCacheMinPosition?.call(internals._context._ctx, internals._sequenceId ?? -1);
        // Unknown: assume nothing before the last window is there.
        return minimum === undefined || minimum < 0 ? Math.max(0, this.sequence.nextTokenIndex - this.window) : minimum;
    }

    /** Whether the slot's own cells serve a cut to `length` tokens exactly: its next position attends to positions from length − window + 1 on. */
    private cellsServe(length: number): boolean {
        return length >= this.sequence.nextTokenIndex - 1 || this.oldestCell() <= Math.max(0, length - this.window + 1);
    }

    private checkpoints(): Checkpoint[] {
        return (this.internals._checkpoints?._checkpoints ?? []).map(([, checkpoint]) => checkpoint);
    }

    /**
     * Whether a checkpoint serves a cut to `length` tokens exactly: it reaches the cut, and holds
     * every sliding-window cell the next position attends to (from length − window + 1 on). So a
     * checkpoint taken once a prompt is evaluated also serves a cut a few tokens before its end,
     * where the next turn leaves the prompt: node-llama-cpp's `restoreCheckpoint` puts its cells
     * back and removes those from the cut on.
     */
    private checkpointServes(checkpoint: Checkpoint, length: number): boolean {
        return checkpoint.maxPos + 1 >= length && checkpoint.minPos <= Math.max(0, length - this.window + 1);
    }

    /** The most tokens, at most `length`, the slot can be cut back to exactly. */
    exactCut(length: number): number {
        if (length <= 0) return 0;
        if (this.cellsServe(length)) return length;
        let best = 0;
        for (const checkpoint of this.checkpoints()) {
            const cut = Math.min(length, checkpoint.maxPos + 1);
            if (cut > best && this.checkpointServes(checkpoint, cut)) best = cut;
        }
        return best;
    }

    /**
     * Drops the checkpoints taken after the first that serves a cut to `length` (a tool loop's
     * earlier turns' ones), so that one and the older ones (the preamble's) outlast the next
     * checkpoints: node-llama-cpp keeps a few, and prunes the oldest first. Nothing when none
     * serves that cut. Checkpoints follow one another in position (a cut prunes those past it).
     */
    keepCheckpointsTo(length: number): void {
        const serving = this.checkpoints().filter((checkpoint) => this.checkpointServes(checkpoint, length));
        if (serving.length === 0) return;
        const kept = Math.min(...serving.map((checkpoint) => checkpoint.maxPos));
        this.internals._checkpoints?.pruneFromEndToIndex?.call(this.internals._checkpoints, kept);
    }

    /**
     * Cuts the slot back to `length` tokens, exactly (`length` as `exactCut` gave it); a cut that
     * cannot be made exactly empties the slot. Needs the context lock (the step barrier's
     * exclusive section).
     */
    async cutTo(length: number): Promise<void> {
        const sequence = this.sequence;
        const held = sequence.nextTokenIndex;
        if (length >= held) return;
        if (length > 0 && this.cellsServe(length)) {
            await sequence.eraseContextTokenRanges([{ start: length, end: held }]);
            return;
        }
        // The one reaching least past the cut: it was taken closest to it.
        const checkpoint = length <= 0 ? undefined : this.checkpoints()
            .filter((candidate) => this.checkpointServes(candidate, length))
            .reduce<Checkpoint | undefined>((best, candidate) => (best === undefined || candidate.maxPos < best.maxPos ? candidate : best), undefined);
        const internals = this.internals;
        const context = internals._context?._ctx;
        if (checkpoint !== undefined && context?.restoreCheckpoint !== undefined && internals._contextTokens !== undefined && internals._sequenceId !== undefined) {
            let restored = false;
            try {
                restored = await context.restoreCheckpoint.call(context, checkpoint, length - 1, internals._sequenceId);
            } catch {
                restored = false;
            }
            if (restored) {
                internals._contextTokens = internals._contextTokens.slice(0, length);
                internals._nextTokenIndex = length;
                internals._checkpoints?.pruneFromEndToIndex?.call(internals._checkpoints, length - 1);
                return;
            }
        }
        await sequence.clearHistory();
    }
}

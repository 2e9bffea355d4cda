import type { LlamaContextSequence, Token } from "node-llama-cpp";
import type { SlotStore } from "./slotCache/slotStore.js";
import { loadSequenceState, saveSequenceState } from "./sequenceStateFile.js";
import type { StepBarrier } from "./stepBarrier.js";
import { WindowedSequence } from "./windowedSequence.js";

/**
 * A prompt is evaluated in pieces of this many tokens, so that exclusive work waits for at most
 * one piece of each prompt being evaluated: half of Maple's default batch, which keeps the batches
 * full when two prompts are evaluated at once.
 */
export const promptChunkTokens = 256;

/** The slots as node-llama-cpp sequences of one context (slot i is sequence i); state operations run in the step barrier's exclusive section. */
export class LlamaSlotStore implements SlotStore {
    /** With the windowed sliding-window cache: each slot's exact cuts and checkpoints (see WindowedSequence). */
    private readonly windowed: readonly WindowedSequence[] | undefined;

    /** `slidingWindow`: the model's window when the context runs the windowed cache, else 0. */
    constructor(private readonly sequences: readonly LlamaContextSequence[], private readonly barrier: StepBarrier, slidingWindow = 0) {
        this.windowed = slidingWindow > 0 ? sequences.map((sequence) => new WindowedSequence(sequence, slidingWindow)) : undefined;
        if (this.windowed === undefined) {
            this.checkpoint = undefined;
            this.keepCheckpointsTo = undefined;
        }
    }

    get slots(): number {
        return this.sequences.length;
    }

    sequence(slot: number): LlamaContextSequence {
        const sequence = this.sequences[slot];
        if (sequence === undefined) throw new RangeError(`no slot ${slot}`);
        return sequence;
    }

    tokens(slot: number): readonly number[] {
        return this.sequence(slot).contextTokens;
    }

    tokenCount(slot: number): number {
        return this.sequence(slot).nextTokenIndex;
    }

    save(slot: number, file: string): Promise<{ bytes: number; milliseconds: number }> {
        const sequence = this.sequence(slot);
        return this.barrier.exclusive(async () => {
            const startedAt = performance.now();
            const { bytes, milliseconds } = await saveSequenceState(sequence, file);
            return { bytes, milliseconds: milliseconds ?? performance.now() - startedAt };
        });
    }

    load(slot: number, file: string): Promise<{ tokens: readonly number[]; milliseconds: number }> {
        const sequence = this.sequence(slot);
        return this.barrier.exclusive(async () => {
            const startedAt = performance.now();
            const { tokens, milliseconds } = await loadSequenceState(sequence, file);
            return { tokens, milliseconds: milliseconds ?? performance.now() - startedAt };
        });
    }

    /** In chunks, each queued only while no exclusive work waits (see StepBarrier.prefillGate). */
    async evaluate(slot: number, tokens: readonly number[]): Promise<void> {
        const sequence = this.sequence(slot);
        for (let start = 0; start < tokens.length; start += promptChunkTokens) {
            await this.barrier.prefillGate();
            await sequence.evaluateWithoutGeneratingNewTokens(tokens.slice(start, start + promptChunkTokens) as Token[]);
        }
    }

    reusable(slot: number, shared: number): number {
        return this.windowed?.[slot]?.exactCut(shared) ?? shared;
    }

    async erase(slot: number, start: number): Promise<void> {
        const sequence = this.sequence(slot);
        const end = sequence.nextTokenIndex;
        const windowed = this.windowed?.[slot];
        await this.barrier.exclusive(() => (windowed === undefined ? sequence.eraseContextTokenRanges([{ start, end }]) : windowed.cutTo(start)));
    }

    checkpoint? = async (slot: number): Promise<void> => {
        const sequence = this.sequence(slot);
        await this.barrier.exclusive(() => sequence.takeCheckpoint());
    };

    keepCheckpointsTo? = async (slot: number, length: number): Promise<void> => {
        const windowed = this.windowed?.[slot];
        if (windowed !== undefined) await this.barrier.exclusive(async () => windowed.keepCheckpointsTo(length));
    };

    /** Bytes the slots' checkpoints hold (inside the prompt cache's bound). */
    checkpointBytes(): number {
        return this.windowed === undefined ? 0 : this.sequences.reduce((sum, sequence) => sum + sequence.checkpointsMemoryUsage, 0);
    }
}

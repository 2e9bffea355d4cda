import type { LlamaContextSequence, Token } from "node-llama-cpp";
import type { SlotStore } from "./slotCache/slotStore.js";
import { loadSequenceState, saveSequenceState } from "./sequenceStateFile.js";
import type { StepBarrier } from "./stepBarrier.js";

/** The slots as node-llama-cpp sequences of one context (slot i is sequence i); state operations run in the step barrier's exclusive section. */
export class LlamaSlotStore implements SlotStore {
    constructor(private readonly sequences: readonly LlamaContextSequence[], private readonly barrier: StepBarrier) {}

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
            const bytes = await saveSequenceState(sequence, file);
            return { bytes, milliseconds: performance.now() - startedAt };
        });
    }

    load(slot: number, file: string): Promise<readonly number[]> {
        const sequence = this.sequence(slot);
        return this.barrier.exclusive(() => loadSequenceState(sequence, file));
    }

    async evaluate(slot: number, tokens: readonly number[]): Promise<void> {
        if (tokens.length > 0) await this.sequence(slot).evaluateWithoutGeneratingNewTokens(tokens as Token[]);
    }

    async erase(slot: number, start: number): Promise<void> {
        const sequence = this.sequence(slot);
        const end = sequence.nextTokenIndex;
        await this.barrier.exclusive(() => sequence.eraseContextTokenRanges([{ start, end }]));
    }
}

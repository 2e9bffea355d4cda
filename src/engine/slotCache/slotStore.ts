/**
 * What the slot-cache policy needs of the slots: the tokens each holds and its KV state as a
 * file. Each operation that touches a slot's state runs with the context to itself (no decode in
 * between); the llama engine's store (llamaSlotStore.ts) runs them in its step barrier's
 * exclusive section over node-llama-cpp's sequences.
 */
export interface SlotStore {
    readonly slots: number;
    /** The tokens slot `slot` holds, in order: one KV cell each. */
    tokens(slot: number): readonly number[];
    /** How many tokens it holds (`tokens(slot).length`, without the copy). */
    tokenCount(slot: number): number;
    /** Writes the slot's state and token list to `file`; the bytes written, and how long the write took (not the wait for the context). */
    save(slot: number, file: string): Promise<{ bytes: number; milliseconds: number }>;
    /**
     * Replaces the slot's state with the one `save` wrote to `file`, and returns the tokens the slot
     * then holds and how long the load took (not the wait for the context). On a failure the slot
     * is left empty and the error thrown.
     */
    load(slot: number, file: string): Promise<{ tokens: readonly number[]; milliseconds: number }>;
    /** Evaluates `tokens` after what the slot holds, generating nothing (a prompt's preamble, before its state is saved). */
    evaluate(slot: number, tokens: readonly number[]): Promise<void>;
    /** Erases the slot's tokens from position `start` on (the slot then holds fewer when the cells could not be removed). */
    erase(slot: number, start: number): Promise<void>;
    /**
     * The most of its first `shared` tokens the slot can be cut back to exactly (erase from
     * there): all of them, except with a sliding-window model's windowed cache, where only cuts
     * its cells or a checkpoint serve are exact (see WindowedSequence).
     */
    reusable(slot: number, shared: number): number;
    /**
     * With the windowed sliding-window cache only: keeps a checkpoint of the slot as it is now,
     * so it can later be cut back to here exactly (a prompt's preamble end, its turn boundary).
     */
    checkpoint?(slot: number): Promise<void>;
    /**
     * With checkpoints: drops those taken after the first that serves a cut to `length` (a tool
     * loop's earlier turns' ones), so that one and the older ones are not the next pruned.
     */
    keepCheckpointsTo?(slot: number, length: number): Promise<void>;
}

import type { LlamaContextSequence } from "node-llama-cpp";

/** The internals this module reaches, as node-llama-cpp 3.22.1 declares them. */
interface SequenceInternals {
    _sequenceId?: number;
    _context?: { _ctx?: { removeTokenCellsFromSequence?: (sequenceId: number, start: number, end: number) => boolean } };
}

/**
 * Removes the KV cells the sequence holds beyond the tokens node-llama-cpp knows it holds.
 *
 * A decode whose sampling throws (a grammar and a logit_bias that leave no token) has already
 * written its batch into the KV cache, but node-llama-cpp 3.22.1 rejects the decode before it
 * counts those tokens (LlamaContextSequence._decodeTokens). The sequence then says it holds n
 * tokens while llama.cpp holds more, and the next batch on it is refused ("inconsistent sequence
 * positions"). `eraseContextTokenRanges` and `clearHistory` clamp to the n tokens it knows, so
 * the cells are removed here through the context's `removeTokenCellsFromSequence`
 * (`llama_memory_seq_rm` from position n to the end). Needs the context lock: run it inside
 * `StepBarrier.exclusive`. Re-check it when upgrading node-llama-cpp.
 *
 * Returns false when it could not (the internals are gone); the caller then empties the sequence.
 */
export function dropUntrackedCells(sequence: LlamaContextSequence): boolean {
    const internals = sequence as unknown as SequenceInternals;
    const remove = internals._context?._ctx?.removeTokenCellsFromSequence;
    if (internals._sequenceId === undefined || typeof remove !== "function") return false;
    try {
        return remove.call(internals._context!._ctx, internals._sequenceId, sequence.nextTokenIndex, -1);
    } catch {
        return false;
    }
}

import type { LlamaContextSequence } from "node-llama-cpp";

/** The internal method this module wraps, as node-llama-cpp 3.22.1 declares it. */
interface SequenceWithStateCopy {
    _copyStateFromOtherSequence?: (other: LlamaContextSequence, upToTokenIndex: number) => Promise<boolean>;
}

/**
 * Makes `target` hold the same first `length` tokens (their KV cache state) as `source`, without
 * evaluating them: n > 1 choices share one prefill this way.
 *
 * node-llama-cpp has no public API for this. It is the internal
 * `LlamaContextSequence._copyStateFromOtherSequence(other, upToTokenIndex)` of node-llama-cpp
 * **3.22.1** (pinned; dist/evaluator/LlamaContext/LlamaContext.js), which copies the other
 * sequence's token list and KV cells (`llama_memory_seq_cp`) and erases the cells from
 * `upToTokenIndex` on. It must run while no decode holds the context lock (the caller's
 * `StepBarrier.exclusive`). This is the only place Maple calls it: re-check it when upgrading.
 *
 * Returns false when the copy did not happen (the method is gone, it failed, or it reported a
 * state of another length); `target` is then emptied, and its generation evaluates the prompt
 * itself.
 */
export async function copySequenceState(target: LlamaContextSequence, source: LlamaContextSequence, length: number): Promise<boolean> {
    const copy = (target as unknown as SequenceWithStateCopy)._copyStateFromOtherSequence;
    if (typeof copy === "function") {
        try {
            if (await copy.call(target, source, length) && target.nextTokenIndex === length) return true;
        } catch {
            // Fall through to the re-evaluation.
        }
    }
    // Its token list may no longer match its KV cells: start it over.
    await target.clearHistory();
    return false;
}

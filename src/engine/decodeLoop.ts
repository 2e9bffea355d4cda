import type { LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import type { RequestSampling, EvaluationOutput } from "./samplingAdapters.js";
import type { StateCosts } from "./stateCosts.js";
import type { StepBarrier } from "./stepBarrier.js";
import { dropUntrackedCells } from "./sequenceCells.js";
import type { GeneratedToken, GenerationEnd } from "./types.js";

export interface DecodeOptions {
    /** Slot i is sequence i: the step barrier counts arrivals by slot. */
    slot: number;
    sequence: LlamaContextSequence;
    model: LlamaModel;
    /** The prompt's tokens the slot does not hold yet (at least its last one). */
    input: Token[];
    sampling: RequestSampling;
    maxTokens: number;
    signal: AbortSignal;
    barrier: StepBarrier;
    /** Prompt evaluations are timed here (what a save is weighed against). */
    costs: StateCosts;
}

/**
 * Generates in a slot, one step of the shared batch at a time: the first step evaluates the
 * prompt's uncached part, each next one the token sampled before. Every generating slot arrives
 * at the step barrier before a step, so all of them decode in one llama.cpp batch.
 */
export async function* decodeLoop(options: DecodeOptions): AsyncGenerator<GeneratedToken, GenerationEnd, void> {
    const { slot, sequence, model, input, sampling, maxTokens, signal, barrier, costs } = options;
    const evaluation = sequence.evaluateWithMetadata(input, sampling.metadata, sampling.options);
    let generated = 0;
    let prefilled = false;
    let faulted = false;
    barrier.join();
    try {
        if (maxTokens <= 0) return { reason: "length" };
        for (;;) {
            await barrier.arrive(slot);
            let step: IteratorResult<EvaluationOutput | undefined, void>;
            if (prefilled) step = await barrier.step(() => evaluation.next());
            else {
                const prefillEnded = costs.startPrefill(input.length);
                step = await barrier.prefill(() => evaluation.next()).finally(prefillEnded);
                prefilled = true;
            }
            if (step.done) break;
            const output = step.value as EvaluationOutput;
            if (signal.aborted) break;
            if (model.isEogToken(output.token)) return { reason: "eog", token: output.token };
            yield sampling.accept(output);
            generated += 1;
            if (generated >= maxTokens) return { reason: "length" };
            // The sampled token still has to be evaluated: stop while it fits in the slot.
            if (sequence.nextTokenIndex + 1 >= sequence.contextSize) return { reason: "context" };
        }
        // node-llama-cpp ends the evaluation itself only when the context cannot take another token.
        return signal.aborted ? { reason: "length" } : { reason: "context" };
    } catch (error) {
        faulted = true;
        throw error;
    } finally {
        barrier.leave();
        await evaluation.return();
        // After a failed decode the slot may hold KV cells its sequence does not count: remove them.
        if (faulted) await barrier.exclusive(async () => {
            if (!dropUntrackedCells(sequence)) await sequence.clearHistory();
        });
    }
}

import type { LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import type { RequestSampling, EvaluationOutput } from "./samplingAdapters.js";
import type { StepBarrier } from "./stepBarrier.js";
import type { DirectSteps, NativeSampler } from "./directSteps.js";
import { dropUntrackedCells } from "./sequenceCells.js";
import type { GeneratedToken, GenerationEnd } from "./types.js";

/**
 * Resolves after node-llama-cpp has handed the step just asked for to llama.cpp. It dispatches a
 * batch from a setImmediate (to gather every sequence's token), and the consumer's work on the
 * token, run from microtasks, would otherwise all come first. The first setImmediate here is
 * queued before node-llama-cpp's (its request is still a few awaits from it); the second runs in
 * the next loop turn, after the dispatch (a pending immediate keeps that turn from blocking).
 */
function nextDispatched(): Promise<void> {
    return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

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
    /** Steps a plain generation (sampling.directConfig) after its prompt without node-llama-cpp's evaluation. */
    direct?: DirectSteps;
    /**
     * Run once the prompt is evaluated, before the first generated token is: only when the
     * generation goes on past the prompt (a checkpoint of the slot as the prompt left it).
     */
    afterPrompt?: () => Promise<void>;
}

/**
 * Generates in a slot, one step of the shared batch at a time: the first step evaluates the
 * prompt's uncached part, each next one the token sampled before. Every generating slot arrives
 * at the step barrier before a step, so all of them decode in one llama.cpp batch.
 *
 * The next step is asked for before a token is yielded, so llama.cpp decodes it while the
 * consumer (text, parsers, the wire writer, the socket) handles this one, as llama-server's
 * decode loop does not wait for its HTTP thread. Waiting for the consumer first put its whole
 * per-token work between two decodes. A consumer that stops keeps one step in flight: it ends
 * before the evaluation is closed, and leaves the last yielded token evaluated in the slot. A
 * request whose sampling follows the consumer (a grammar chosen per token from what the parser
 * saw) steps only after the consumer has seen the token before.
 */
export async function* decodeLoop(options: DecodeOptions): AsyncGenerator<GeneratedToken, GenerationEnd, void> {
    const { slot, sequence, model, input, sampling, maxTokens, signal, barrier, afterPrompt } = options;
    // Made on first use: a direct generation never makes it.
    let started: ReturnType<LlamaContextSequence["evaluateWithMetadata"]> | undefined;
    const evaluation = (): NonNullable<typeof started> => started ??= sequence.evaluateWithMetadata(input, sampling.metadata, sampling.options);
    type Step = IteratorResult<EvaluationOutput | undefined, void>;
    // Set once the prompt is evaluated, for a plain generation: its later steps go to the addon directly.
    let direct: { steps: DirectSteps; sampler: NativeSampler; config: () => Record<string, unknown>; token: Token } | undefined;
    const directStep = async (): Promise<Step> => {
        const sampled = await direct!.steps.step(sequence, direct!.token, direct!.sampler, direct!.config());
        if (sampled instanceof Error) throw sampled;
        if (sampled < 0) return { done: true, value: undefined };
        return { done: false, value: { token: sampled as Token } };
    };
    const nextStep = async (): Promise<Step> => {
        await barrier.arrive(slot);
        return await barrier.step(() => direct !== undefined ? directStep() : evaluation().next());
    };
    let inFlight: Promise<Step> | undefined;
    let generated = 0;
    let faulted = false;
    barrier.join();
    try {
        if (maxTokens <= 0) return { reason: "length" };
        let step: Step;
        if (options.direct !== undefined && sampling.directConfig !== undefined) {
            // The prompt but its last token through node-llama-cpp; that token is the first direct step.
            if (input.length > 1) await barrier.prefill(() => sequence.evaluateWithoutGeneratingNewTokens(input.slice(0, -1)));
            direct = { steps: options.direct, sampler: options.direct.sampler(), config: sampling.directConfig, token: input.at(-1)! };
            step = await nextStep();
        } else {
            await barrier.arrive(slot);
            step = await barrier.prefill(() => evaluation().next());
        }
        for (;;) {
            if (step.done) break;
            const output = step.value as EvaluationOutput;
            if (signal.aborted) break;
            if (model.isEogToken(output.token)) return { reason: "eog", token: output.token };
            // Accepted before the next step samples: the penalty window must hold this token.
            const token = sampling.accept(output);
            if (direct !== undefined) direct.token = output.token;
            generated += 1;
            const last = generated >= maxTokens
                // The sampled token still has to be evaluated: stop while it fits in the slot.
                || sequence.nextTokenIndex + 1 >= sequence.contextSize;
            if (generated === 1 && !last && afterPrompt !== undefined) await afterPrompt();
            if (!last && !sampling.followsConsumer) {
                inFlight = nextStep();
                // Handled now, awaited after the yield: a failure while the consumer holds the
                // token must not count as unhandled.
                inFlight.catch(() => undefined);
                await (direct !== undefined ? direct.steps.afterDispatch() : nextDispatched());
            }
            yield token;
            if (last) return { reason: generated >= maxTokens ? "length" : "context" };
            step = await (inFlight ?? nextStep());
            inFlight = undefined;
        }
        // node-llama-cpp ends the evaluation itself only when the context cannot take another token.
        return signal.aborted ? { reason: "length" } : { reason: "context" };
    } catch (error) {
        faulted = true;
        throw error;
    } finally {
        // A step still in flight (the consumer stopped) must end before the evaluation closes.
        if (inFlight !== undefined) await inFlight.catch(() => { faulted = true; });
        barrier.leave();
        await started?.return();
        direct?.sampler.dispose();
        // After a failed decode the slot may hold KV cells its sequence does not count: remove them.
        if (faulted) await barrier.exclusive(async () => {
            if (!dropUntrackedCells(sequence)) await sequence.clearHistory();
        });
    }
}

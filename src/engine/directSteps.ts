import { createRequire } from "node:module";
import type { LlamaContext, LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import { withLock } from "lifecycle-utils";
import type { StepBarrier } from "./stepBarrier.js";

/**
 * Whether node-llama-cpp's `withLock` is the one imported here: its locks live in the module, so a
 * second copy of lifecycle-utils would not keep a direct step out of node-llama-cpp's batch
 * dispatch (both fill the context's one native batch). package.json pins the version
 * node-llama-cpp takes, so npm installs one copy.
 */
function sharesNodeLlamaCppLocks(): boolean {
    try {
        const fromNodeLlamaCpp = createRequire(import.meta.resolve("node-llama-cpp")).resolve("lifecycle-utils");
        return fromNodeLlamaCpp === createRequire(import.meta.url).resolve("lifecycle-utils");
    } catch {
        return false;
    }
}

/**
 * The rebuilt addon's job for generation steps: [sequenceId, position, token] a step in `steps`,
 * its sampler at the same index in `samplers` (patches/node-llama-cpp/sampling-in-decode.patch).
 */
interface NativeContext {
    decodeStepsAndSample(steps: Int32Array, samplers: NativeSampler[]): Promise<(number | Error)[]>;
}
interface SequenceInternals {
    _sequenceId: number;
    _nextTokenIndex: number;
    _contextTokens: number[];
}
export interface NativeSampler {
    applyConfig(config: Record<string, unknown>): void;
    dispose(): void;
}

interface QueuedStep {
    sequence: LlamaContextSequence;
    token: Token;
    sampler: NativeSampler;
    config: Record<string, unknown>;
    resolve(token: number | Error): void;
    reject(error: unknown): void;
}

/**
 * Decodes generation steps of a context's sequences without node-llama-cpp's evaluation: the
 * steps queued before the microtask queue drains go into one batch, decoded and sampled in one
 * native job (`decodeStepsAndSample`), under the context lock node-llama-cpp's own batch dispatch
 * takes. Each step's token is then counted in its sequence as node-llama-cpp counts the tokens it
 * decodes. node-llama-cpp's evaluation costs the main thread 0.5–1.1 ms a token (bench/directSteps).
 *
 * The batch goes out from a `process.nextTick`, which runs once the microtasks that queued its
 * steps have drained (the generations a step barrier releases together reach `step` in those
 * microtasks), and before the loop turns: a setImmediate, as node-llama-cpp dispatches, cost one
 * more turn of the event loop a step, and the decode loop a second one to wait for it.
 */
export class DirectSteps {
    private queued: QueuedStep[] = [];
    private readonly native: NativeContext;
    /** Batches handed out or waiting for the context lock. */
    private readonly dispatches = new Set<Promise<void>>();
    /** A batch's steps as the addon reads them, reused: the addon copies them out before it returns. */
    private stepNumbers = new Int32Array(3 * 4);
    /** The config each sampler was last given: re-applying an unchanged one reads all its fields through N-API for nothing. */
    private readonly appliedConfigs = new WeakMap<NativeSampler, Record<string, unknown>>();

    private constructor(private readonly context: LlamaContext, private readonly model: LlamaModel) {
        this.native = (context as unknown as { _ctx: NativeContext })._ctx;
    }

    /** Undefined when the addon has no steps job (the prebuilt one), or the context lock cannot be shared. */
    static for(context: LlamaContext, model: LlamaModel): DirectSteps | undefined {
        const stepsJob = typeof (context as unknown as { _ctx?: Partial<NativeContext> })._ctx?.decodeStepsAndSample === "function";
        return stepsJob && sharesNodeLlamaCppLocks() ? new DirectSteps(context, model) : undefined;
    }

    /** Makes the barrier's exclusive work wait until no step of this context is in flight (see StepBarrier.onExclusive). */
    settleFor(barrier: StepBarrier): void {
        barrier.onExclusive(() => this.settled());
    }

    /** Resolves once no step of this context is queued or in flight. */
    private async settled(): Promise<void> {
        // Steps queued in these microtasks are dispatched from a tick queued before this one.
        if (this.queued.length > 0) await new Promise((resolve) => process.nextTick(resolve));
        await Promise.all(this.dispatches);
    }

    /** A sampler of the model's (disposed by the caller). */
    sampler(): NativeSampler {
        const llama = (this.model as unknown as { _llama: { _bindings: { AddonSampler: new (model: unknown) => NativeSampler } } })._llama;
        return new llama._bindings.AddonSampler((this.model as unknown as { _model: unknown })._model);
    }

    /**
     * Decodes `token` as the sequence's next one and samples the token after it (an Error for this
     * sequence alone). The batch is handed to llama.cpp (or waits for the context lock) before
     * `afterDispatch()` resolves, when both are asked for in the same microtasks.
     */
    step(sequence: LlamaContextSequence, token: Token, sampler: NativeSampler, config: Record<string, unknown>): Promise<number | Error> {
        return new Promise((resolve, reject) => {
            if (this.queued.length === 0) process.nextTick(() => {
                const dispatched = this.dispatch();
                this.dispatches.add(dispatched);
                void dispatched.finally(() => this.dispatches.delete(dispatched));
            });
            this.queued.push({ sequence, token, sampler, config, resolve, reject });
        });
    }

    /**
     * Resolves after the steps queued in these microtasks were dispatched: the caller's work on
     * the last token then runs while llama.cpp decodes the next one, instead of before it.
     */
    afterDispatch(): Promise<void> {
        // The steps reach step() in microtasks after this call, and queue the dispatch's tick
        // then: Node runs the ticks queued while microtasks drain in order, all of them before
        // the microtasks they queue (processTicksAndRejections), so this one resolves first and
        // its caller resumes after the dispatch.
        return new Promise((resolve) => process.nextTick(resolve));
    }

    private async dispatch(): Promise<void> {
        const steps = this.queued;
        this.queued = [];
        try {
            await withLock([this.context, "context"], async () => {
                if (this.stepNumbers.length < 3 * steps.length) this.stepNumbers = new Int32Array(3 * steps.length);
                const numbers = this.stepNumbers.subarray(0, 3 * steps.length);
                const samplers: NativeSampler[] = [];
                steps.forEach((step, index) => {
                    const internals = step.sequence as unknown as SequenceInternals;
                    numbers[3 * index] = internals._sequenceId;
                    numbers[3 * index + 1] = internals._nextTokenIndex;
                    numbers[3 * index + 2] = step.token;
                    this.configure(step);
                    samplers.push(step.sampler);
                });
                const sampled = await this.native.decodeStepsAndSample(numbers, samplers);
                steps.forEach((step, index) => {
                    // Counted as node-llama-cpp counts the tokens it decodes.
                    const internals = step.sequence as unknown as SequenceInternals;
                    internals._nextTokenIndex += 1;
                    internals._contextTokens.push(step.token);
                    step.resolve(sampled[index] ?? new Error("no token sampled"));
                });
            });
        } catch (error) {
            for (const step of steps) step.reject(error);
        }
    }

    /** Gives the step's sampler its config, unless it already has it. */
    private configure(step: QueuedStep): void {
        if (this.appliedConfigs.get(step.sampler) === step.config) return;
        step.sampler.applyConfig(step.config);
        this.appliedConfigs.set(step.sampler, step.config);
    }
}

import { createRequire } from "node:module";
import type { LlamaContext, LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import { withLock } from "lifecycle-utils";
import { samplesInsideDecode } from "./nativeBatches.js";

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

/** node-llama-cpp 3.22.1's internals a direct step uses (the rebuilt addon's decodeBatchAndSample). */
interface NativeContext {
    initBatch(size: number): void;
    addToBatch(sequenceId: number, firstTokenIndex: number, tokens: Uint32Array, logitIndexes: Uint32Array): Uint32Array;
    decodeBatchAndSample?(items: unknown[]): Promise<(number | Error)[]>;
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
 * steps queued in one event-loop turn go into one batch, decoded and sampled in one native job
 * (`decodeBatchAndSample`), under the context lock node-llama-cpp's own batch dispatch takes.
 * Each step's token is then counted in its sequence as node-llama-cpp counts the tokens it
 * decodes. node-llama-cpp's evaluation costs the main thread 0.5–1.1 ms a token (bench/directSteps).
 */
export class DirectSteps {
    private queued: QueuedStep[] = [];
    private readonly native: NativeContext;

    private constructor(private readonly context: LlamaContext, private readonly model: LlamaModel) {
        this.native = (context as unknown as { _ctx: NativeContext })._ctx;
    }

    /** Undefined when the addon cannot sample inside the decode job, or the context lock cannot be shared. */
    static for(context: LlamaContext, model: LlamaModel): DirectSteps | undefined {
        return samplesInsideDecode(context) && sharesNodeLlamaCppLocks() ? new DirectSteps(context, model) : undefined;
    }

    /** A sampler of the model's (disposed by the caller). */
    sampler(): NativeSampler {
        const llama = (this.model as unknown as { _llama: { _bindings: { AddonSampler: new (model: unknown) => NativeSampler } } })._llama;
        return new llama._bindings.AddonSampler((this.model as unknown as { _model: unknown })._model);
    }

    /** Decodes `token` as the sequence's next one and samples the token after it (an Error for this sequence alone). */
    step(sequence: LlamaContextSequence, token: Token, sampler: NativeSampler, config: Record<string, unknown>): Promise<number | Error> {
        return new Promise((resolve, reject) => {
            if (this.queued.length === 0) setImmediate(() => void this.dispatch());
            this.queued.push({ sequence, token, sampler, config, resolve, reject });
        });
    }

    private async dispatch(): Promise<void> {
        const steps = this.queued;
        this.queued = [];
        try {
            await withLock([this.context, "context"], async () => {
                this.native.initBatch(steps.length);
                const items: unknown[] = [];
                for (const step of steps) {
                    const internals = step.sequence as unknown as SequenceInternals;
                    const [logitIndex] = this.native.addToBatch(internals._sequenceId, internals._nextTokenIndex, Uint32Array.of(step.token), Uint32Array.of(0));
                    step.sampler.applyConfig(step.config);
                    items.push(logitIndex, step.sampler);
                }
                const sampled = await this.native.decodeBatchAndSample!(items);
                steps.forEach((step, index) => {
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
}

import type { LlamaContext, LlamaContextSequence } from "node-llama-cpp";

/** Each native context's last save time, from when node-llama-cpp held its lock (see timeNativeSaves). */
const nativeSaveMs = new WeakMap<object, number>();

type NativeSave = (...args: unknown[]) => Promise<unknown>;

/** The internal this module wraps, as node-llama-cpp 3.22.1 declares it. */
interface ContextInternals {
    _ctx?: { saveSequenceStateToFile?: NativeSave };
}

/**
 * Times the context's state saves from when they hold its lock, not from when they were asked for:
 * a save waits for the decodes in flight (up to a prompt chunk of every slot, 0.4–1.1 s measured),
 * and that wait, timed as the save's own, made saves look dearer or, judged by the fastest, far
 * cheaper than they are (40 ms against 281 ms on average on one agents run). Wraps
 * node-llama-cpp 3.22.1's internal `AddonContext.saveSequenceStateToFile`, which its
 * `saveStateToFile` calls under the lock; re-check it when upgrading (without it, saves are timed
 * whole).
 */
export function timeNativeSaves(context: LlamaContext): void {
    const native = (context as unknown as ContextInternals)._ctx;
    const save = native?.saveSequenceStateToFile;
    if (native === undefined || typeof save !== "function") return;
    Object.defineProperty(native, "saveSequenceStateToFile", {
        configurable: true,
        value(this: object, ...args: unknown[]) {
            const startedAt = performance.now();
            return save.apply(this, args).finally(() => nativeSaveMs.set(native, performance.now() - startedAt));
        }
    });
}

/**
 * Writes a sequence's KV state and token list to `file` (llama.cpp's `llama_state_seq_save_file`
 * through node-llama-cpp 3.22.1's `saveStateToFile`, the only sequence-state API it offers: there
 * is no in-memory `llama_state_seq_get_data`). Needs the context lock: run it inside
 * `StepBarrier.exclusive`. Returns the file's size in bytes, and the save's own milliseconds
 * when its context's saves are timed (see timeNativeSaves).
 */
export async function saveSequenceState(sequence: LlamaContextSequence, file: string): Promise<{ bytes: number; milliseconds: number | undefined }> {
    const native = (sequence.context as unknown as ContextInternals)._ctx;
    if (native !== undefined) nativeSaveMs.delete(native);
    const { fileSize } = await sequence.saveStateToFile(file);
    // Saves hold the lock one at a time: the last one timed is this one.
    return { bytes: fileSize, milliseconds: native === undefined ? undefined : nativeSaveMs.get(native) };
}

/**
 * Loads a state written by `saveSequenceState` into `sequence`, replacing what it held, and
 * returns the tokens it now holds. llama.cpp's loader trusts the file: a state from another model
 * or context layout can crash the process (node-llama-cpp makes the caller "accept the risk").
 * So the caller loads only entries keyed by this model's identity whose bytes it wrote or
 * checked (see promptCache/). On any failure the sequence is emptied and the error rethrown.
 * Needs the context lock, as `saveSequenceState`.
 */
export async function loadSequenceState(sequence: LlamaContextSequence, file: string): Promise<readonly number[]> {
    try {
        await sequence.loadStateFromFile(file, { acceptRisk: true });
        return sequence.contextTokens;
    } catch (error) {
        await sequence.clearHistory();
        throw error;
    }
}

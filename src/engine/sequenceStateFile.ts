import type { LlamaContext, LlamaContextSequence } from "node-llama-cpp";

/** Each native context's last save and load times, from when node-llama-cpp held its lock (see timeNativeStateWork). */
const nativeMs = { save: new WeakMap<object, number>(), load: new WeakMap<object, number>() };

type NativeCall = (...args: unknown[]) => Promise<unknown>;

/** The internals this module wraps, as node-llama-cpp 3.22.1 declares them. */
interface ContextInternals {
    _ctx?: { saveSequenceStateToFile?: NativeCall; loadSequenceStateFromFile?: NativeCall };
}

const nativeMethods = { save: "saveSequenceStateToFile", load: "loadSequenceStateFromFile" } as const;

/**
 * Times the context's state saves and loads from when they hold its lock, not from when they were
 * asked for: they wait for the decodes in flight (up to a prompt chunk of every slot, 0.4–1.1 s
 * measured), and that wait, timed as their own, made saves look dearer or, judged by the fastest,
 * far cheaper than they are (40 ms against 281 ms on average on one agents run). Wraps node-llama-cpp
 * 3.22.1's internal `AddonContext.saveSequenceStateToFile` and `loadSequenceStateFromFile`, which
 * its `saveStateToFile` and `loadStateFromFile` call under the lock; re-check them when upgrading
 * (without them, saves and loads are timed whole).
 */
export function timeNativeStateWork(context: LlamaContext): void {
    const native = (context as unknown as ContextInternals)._ctx;
    if (native === undefined) return;
    for (const kind of ["save", "load"] as const) {
        const call = native[nativeMethods[kind]];
        if (typeof call !== "function") continue;
        Object.defineProperty(native, nativeMethods[kind], {
            configurable: true,
            value(this: object, ...args: unknown[]) {
                const startedAt = performance.now();
                return call.apply(this, args).finally(() => nativeMs[kind].set(native, performance.now() - startedAt));
            }
        });
    }
}

/**
 * Writes a sequence's KV state and token list to `file` (llama.cpp's `llama_state_seq_save_file`
 * through node-llama-cpp 3.22.1's `saveStateToFile`, the only sequence-state API it offers: there
 * is no in-memory `llama_state_seq_get_data`). Needs the context lock: run it inside
 * `StepBarrier.exclusive`. Returns the file's size in bytes, and the save's own milliseconds
 * when its context's state work is timed (see timeNativeStateWork).
 */
export async function saveSequenceState(sequence: LlamaContextSequence, file: string): Promise<{ bytes: number; milliseconds: number | undefined }> {
    const native = (sequence.context as unknown as ContextInternals)._ctx;
    if (native !== undefined) nativeMs.save.delete(native);
    const { fileSize } = await sequence.saveStateToFile(file);
    // Saves hold the lock one at a time: the last one timed is this one.
    return { bytes: fileSize, milliseconds: native === undefined ? undefined : nativeMs.save.get(native) };
}

/**
 * Loads a state written by `saveSequenceState` into `sequence`, replacing what it held, and
 * returns the tokens it now holds. llama.cpp's loader trusts the file: a state from another model
 * or context layout can crash the process (node-llama-cpp makes the caller "accept the risk").
 * So the caller loads only entries keyed by this model's identity whose bytes it wrote or
 * checked (see promptCache/). On any failure the sequence is emptied and the error rethrown.
 * Needs the context lock, as `saveSequenceState`.
 */
export async function loadSequenceState(sequence: LlamaContextSequence, file: string): Promise<{ tokens: readonly number[]; milliseconds: number | undefined }> {
    const native = (sequence.context as unknown as ContextInternals)._ctx;
    if (native !== undefined) nativeMs.load.delete(native);
    try {
        await sequence.loadStateFromFile(file, { acceptRisk: true });
        return { tokens: sequence.contextTokens, milliseconds: native === undefined ? undefined : nativeMs.load.get(native) };
    } catch (error) {
        await sequence.clearHistory();
        throw error;
    }
}

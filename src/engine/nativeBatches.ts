import type { LlamaContext } from "node-llama-cpp";

type NativeCall = (...args: unknown[]) => unknown;

/** The internals this module wraps, as node-llama-cpp 3.22.1 declares them (AddonContext). */
interface ContextInternals {
    _ctx?: { initBatch?: NativeCall; addToBatch?: NativeCall; decodeBatch?: NativeCall; decodeBatchAndSample?: NativeCall };
}

/**
 * Whether the context's addon samples inside the decode job (`decodeBatchAndSample`, built into
 * node-llama-cpp's addon by scripts/patch-node-llama-cpp.js): one native job per generated token
 * instead of a decode and then a sampling job, each a round trip through libuv's pool.
 */
export function samplesInsideDecode(context: LlamaContext): boolean {
    return typeof (context as unknown as ContextInternals)._ctx?.decodeBatchAndSample === "function";
}

/**
 * Reports every batch llama.cpp decodes for the context: its tokens and its own milliseconds,
 * timed at the native call. A prompt's evaluation timed from the JS side waits at the step
 * barrier beside other slots' prompts, and charging it for that wait made a 19-token tail look
 * 1.46 ms a token where batches of that size cost ~12 ms (qwen3-0.6b, 2 cores): the turn states
 * it would have spared were judged not worth a save. Wraps node-llama-cpp 3.22.1's internal
 * `initBatch`, `addToBatch` (its tokens are the batch's) and `decodeBatch` (or the patched
 * addon's `decodeBatchAndSample`, whose time then includes the batch's sampling), which its batch
 * dispatch calls in that order under the context lock; re-check them when upgrading (without
 * them nothing is reported, and the prompt cache keeps its default save-to-prefill ratio).
 */
export function timeNativeBatches(context: LlamaContext, onBatch: (tokens: number, milliseconds: number) => void): void {
    const native = (context as unknown as ContextInternals)._ctx;
    const { initBatch, addToBatch, decodeBatch, decodeBatchAndSample } = native ?? {};
    if (native === undefined || typeof initBatch !== "function" || typeof addToBatch !== "function" || typeof decodeBatch !== "function") return;
    let tokens = 0;
    const wrap = (name: keyof NonNullable<ContextInternals["_ctx"]>, value: NativeCall): void => {
        Object.defineProperty(native, name, { configurable: true, value });
    };
    wrap("initBatch", function (this: object, ...args: unknown[]) {
        tokens = 0;
        return initBatch.apply(this, args);
    });
    wrap("addToBatch", function (this: object, ...args: unknown[]) {
        const added = args[2];
        if (added instanceof Uint32Array) tokens += added.length;
        return addToBatch.apply(this, args);
    });
    const timed = (decode: NativeCall): NativeCall => function (this: object, ...args: unknown[]) {
        const batchTokens = tokens;
        const startedAt = performance.now();
        return (decode.apply(this, args) as Promise<unknown>).then((result) => {
            onBatch(batchTokens, performance.now() - startedAt);
            return result;
        });
    };
    wrap("decodeBatch", timed(decodeBatch));
    if (typeof decodeBatchAndSample === "function") wrap("decodeBatchAndSample", timed(decodeBatchAndSample));
}

/**
 * Sampling inside the decode job against node-llama-cpp's own decode-then-sample, in one process:
 * one long generation whose steps switch path every 16 steps (the rebuilt addon's
 * `decodeBatchAndSample` hidden or not), so both paths share the same pages, threads and the
 * machine's drift (separate launches here decode up to ±10% apart, more than this change).
 * Prints, per path, the tokens of all streams over the time that path ran (a step of one stream
 * can hide batches split between the streams), the median step of the first stream, and the time
 * between one native decode job's end and the next one's start (what llama.cpp waits for).
 *
 *   npm run build && node dist/bench/samplingInDecode.js [--model synthetic:qwen3-0.6b] [--threads 1]
 *       [--streams 1] [--tokens 1024] [--prompt-tokens 200]
 *
 * Run it with UV_THREADPOOL_SIZE=1, as `maple serve` runs.
 */
import { parseArgs } from "node:util";
import { getLlama, LlamaLogLevel, type Token } from "node-llama-cpp";
import { defaultConfig } from "../src/config/settings.js";
import { resolveModel } from "../src/models/resolveModel.js";
import { benchPrompt, median } from "./shared.js";

const { values } = parseArgs({
    options: {
        model: { type: "string", default: "synthetic:qwen3-0.6b" },
        threads: { type: "string", default: "1" },
        streams: { type: "string", default: "1" },
        tokens: { type: "string", default: "1024" },
        "prompt-tokens": { type: "string", default: "200" }
    }
});
const threads = Number(values.threads);
const streams = Number(values.streams);
const tokens = Number(values.tokens);
const block = 16;

const { path: modelPath } = await resolveModel(values.model, { modelsDir: process.env.MAPLE_MODELS_DIR ?? defaultConfig().modelsDir });
const llama = await getLlama({ gpu: false, build: "never", maxThreads: threads, logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath });
// Four sequences, as a 4-slot server allocates, whatever the number of streams.
const context = await model.createContext({ contextSize: 4 * 4096, sequences: 4, threads: { ideal: threads, min: threads }, flashAttention: model.flashAttentionSupported });

type NativeCall = (...args: unknown[]) => Promise<unknown>;
const native = (context as unknown as { _ctx: Record<string, NativeCall | undefined> })._ctx;
const decodeBatchAndSample = native["decodeBatchAndSample"];
if (decodeBatchAndSample === undefined) throw new Error("node-llama-cpp's addon is the prebuilt one: run `node scripts/patch-node-llama-cpp.js` first");

type Path = "inside" | "after";
let current: Path = "after";
const steps: Record<Path, number[]> = { inside: [], after: [] };
const gaps: Record<Path, number[]> = { inside: [], after: [] };
let lastEnd = 0;
/** Times a native decode job, and the wait before it since the last one ended. */
const timed = (call: NativeCall): NativeCall => (...args) => {
    const startedAt = performance.now();
    if (lastEnd > 0) gaps[current].push(startedAt - lastEnd);
    return call.apply(native, args).then((result) => {
        lastEnd = performance.now();
        return result;
    });
};
const decodeBatch = native["decodeBatch"]!;
Object.defineProperty(native, "decodeBatch", { configurable: true, value: timed(decodeBatch) });
const timedInside = timed(decodeBatchAndSample);
/** All streams' tokens and the milliseconds of each window a path ran, the first window left out. */
const windows: Record<Path, { tokens: number; milliseconds: number }> = { inside: { tokens: 0, milliseconds: 0 }, after: { tokens: 0, milliseconds: 0 } };
let windowTokens = 0;
let windowStartedAt = 0;
const choose = (next: Path): void => {
    const now = performance.now();
    if (windowStartedAt > 0) {
        windows[current].tokens += windowTokens;
        windows[current].milliseconds += now - windowStartedAt;
    }
    windowTokens = 0;
    windowStartedAt = now;
    current = next;
    lastEnd = 0;
    Object.defineProperty(native, "decodeBatchAndSample", { configurable: true, value: next === "inside" ? timedInside : undefined });
};

const prompt = model.tokenize(benchPrompt(Number(values["prompt-tokens"])), true);
const sequences = Array.from({ length: streams }, () => context.getSequence());
let step = 0;
let lastStepAt = 0;
// Stock first; its first window (the prompts) is left out like every path's first.
Object.defineProperty(native, "decodeBatchAndSample", { configurable: true, value: undefined });
await Promise.all(sequences.map(async (sequence, index) => {
    let generated = 0;
    for await (const token of sequence.evaluate(prompt, { temperature: 0.6, topK: 20, topP: 0.95, seed: index + 1 })) {
        generated += 1;
        windowTokens += 1;
        // The first stream keeps the clock; every stream steps in the same batches.
        if (index === 0) {
            const now = performance.now();
            // A block's first step was dispatched under the other path: not counted.
            if (generated > 2 && step % block !== 0) steps[current].push(now - lastStepAt);
            lastStepAt = now;
            step += 1;
            if (step % block === 0) choose(Math.floor(step / block) % 2 === 1 ? "inside" : "after");
        }
        if (generated >= tokens || model.isEogToken(token as Token)) break;
    }
}));

const mean = (list: readonly number[]): number => list.reduce((sum, each) => sum + each, 0) / list.length;
console.log(`${values.model}, ${threads} thread(s), ${streams} stream(s) of ${tokens} tokens, UV_THREADPOOL_SIZE=${process.env.UV_THREADPOOL_SIZE ?? "4 (default)"}`);
const rate = (each: Path): number => windows[each].tokens * 1000 / windows[each].milliseconds;
for (const each of ["after", "inside"] as const) {
    console.log(`sampling ${each === "inside" ? "inside the decode job " : "in its own job (stock)"}: ${rate(each).toFixed(2)} tok/s (all streams), `
        + `first stream's step ${median(steps[each]).toFixed(2)} ms median, between decode jobs ${mean(gaps[each]).toFixed(3)} ms mean, ${steps[each].length} steps`);
}
console.log(`inside / stock: ${(rate("inside") / rate("after")).toFixed(4)}× the token rate; `
    + `${(mean(gaps.after) - mean(gaps.inside)).toFixed(3)} ms less between decode jobs`);
await context.dispose();
await model.dispose();

/**
 * What node-llama-cpp's evaluation costs a generated token, in one process: rounds that alternate
 * its `LlamaContextSequence.evaluate` loop (what Maple's decode loop drives) and a loop that calls
 * the rebuilt addon itself, one `decodeStepsAndSample` job per step for all streams, with the
 * same sampler settings, prompts and seeds. Both decode the same batches on the same threads; what
 * differs is the JS between two decode jobs. Prints, per round and path, the streams' tokens a
 * second and the main thread's CPU a token (from /proc), and the direct / evaluate ratios.
 *
 *   npm run build && node dist/bench/directSteps.js [--model synthetic:maple-preview] [--threads 2]
 *       [--streams 1] [--rounds 6] [--tokens 128]
 *
 * Run it with UV_THREADPOOL_SIZE=1, as `maple serve` runs. Linux only (/proc).
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { getLlama, LlamaLogLevel, type LlamaContextSequence, type Token } from "node-llama-cpp";
import { defaultConfig } from "../src/config/settings.js";
import { resolveModel } from "../src/models/resolveModel.js";
import { median, runPrompt } from "./shared.js";

const { values } = parseArgs({
    options: {
        model: { type: "string", default: "synthetic:maple-preview" },
        threads: { type: "string", default: "2" },
        streams: { type: "string", default: "1" },
        rounds: { type: "string", default: "6" },
        tokens: { type: "string", default: "128" },
        "prompt-tokens": { type: "string", default: "200" }
    }
});
const threads = Number(values.threads);
const streams = Number(values.streams);
const tokens = Number(values.tokens);
const sampling = { temperature: 0.6, topK: 20, topP: 0.95 };

const { path: modelPath } = await resolveModel(values.model, { modelsDir: process.env.MAPLE_MODELS_DIR ?? defaultConfig().modelsDir });
const llama = await getLlama({ gpu: false, build: "never", maxThreads: threads, logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath });
// Four sequences, as a 4-slot server allocates them; Maple's windowed cache is node-llama-cpp's default.
const context = await model.createContext({ contextSize: 4 * 4096, sequences: 4, threads: { ideal: threads, min: threads }, flashAttention: model.flashAttentionSupported });
const sequences = Array.from({ length: streams }, () => context.getSequence());

/** node-llama-cpp 3.22.1's internals this bench calls (the rebuilt addon's, for decodeStepsAndSample). */
interface NativeContext {
    decodeStepsAndSample?(steps: Int32Array, samplers: NativeSampler[]): Promise<(number | Error)[]>;
    removeTokenCellsFromSequence(sequenceId: number, start: number, end: number): boolean;
}
interface NativeSampler {
    applyConfig(config: Record<string, unknown>): void;
    dispose(): void;
}
const native = (context as unknown as { _ctx: NativeContext })._ctx;
if (native.decodeStepsAndSample === undefined) throw new Error("node-llama-cpp's addon is the prebuilt one: run `node scripts/patch-node-llama-cpp.js` first");
const bindings = (model as unknown as { _llama: { _bindings: { AddonSampler: new (model: unknown) => NativeSampler } } })._llama._bindings;
const addonModel = (model as unknown as { _model: unknown })._model;
const sequenceId = (sequence: LlamaContextSequence): number => (sequence as unknown as { _sequenceId: number })._sequenceId;

const mainThreadNs = (): number => Number(readFileSync(`/proc/${process.pid}/task/${process.pid}/schedstat`, "utf8").split(" ")[0]);

/** Evaluates each stream's prompt from an empty sequence and returns the first sampled token of each. */
async function prompts(round: number): Promise<Token[]> {
    return await Promise.all(sequences.map(async (sequence, index) => {
        // Tokens the direct path decoded are unknown to node-llama-cpp: remove every cell first.
        native.removeTokenCellsFromSequence(sequenceId(sequence), 0, -1);
        await sequence.clearHistory();
        const input = model.tokenize(runPrompt(round * streams + index, Number(values["prompt-tokens"])), true);
        for await (const token of sequence.evaluate(input, { ...sampling, seed: index + 1 })) return token;
        throw new Error("the prompt's evaluation gave no token");
    }));
}

interface Timing { tokensPerSecond: number; mainMsPerToken: number }

async function timed(run: () => Promise<number>): Promise<Timing> {
    const cpuBefore = mainThreadNs();
    const startedAt = performance.now();
    const generated = await run();
    return { tokensPerSecond: generated / ((performance.now() - startedAt) / 1000), mainMsPerToken: (mainThreadNs() - cpuBefore) / 1e6 / generated };
}

async function viaEvaluate(round: number): Promise<Timing> {
    const first = await prompts(round);
    return await timed(async () => {
        const counts = await Promise.all(sequences.map(async (sequence, index) => {
            let generated = 0;
            for await (const _token of sequence.evaluate([first[index]!], { ...sampling, seed: index + 1 })) if (++generated >= tokens) break;
            return generated;
        }));
        return counts.reduce((sum, count) => sum + count, 0);
    });
}

const samplers = sequences.map(() => new bindings.AddonSampler(addonModel));
const stepNumbers = new Int32Array(3 * streams);
async function viaDirectSteps(round: number): Promise<Timing> {
    const next = await prompts(round);
    const positions = sequences.map((sequence) => sequence.nextTokenIndex);
    samplers.forEach((sampler, index) => sampler.applyConfig({ ...sampling, minP: 0, seed: index + 1 }));
    return await timed(async () => {
        for (let step = 0; step < tokens; step++) {
            sequences.forEach((sequence, index) => {
                stepNumbers.set([sequenceId(sequence), positions[index]!, next[index]!], 3 * index);
                positions[index]! += 1;
            });
            const sampled = await native.decodeStepsAndSample!(stepNumbers, samplers);
            sampled.forEach((token, index) => {
                if (typeof token !== "number" || model.isEogToken(token as Token)) throw new Error(`stream ${index} sampled ${String(token)}`);
                next[index] = token as Token;
            });
        }
        return tokens * streams;
    });
}

console.log(`model ${values.model}, threads ${threads}, ${streams} stream(s), ${tokens} tokens a stream, UV_THREADPOOL_SIZE ${process.env.UV_THREADPOOL_SIZE ?? "(4)"}`);
// Warm both paths (V8 optimizes the per-token code only after it has run a while).
for (let round = 0; round < 3; round++) {
    await viaEvaluate(100 + round);
    await viaDirectSteps(100 + round);
}
const ratios: number[] = [];
for (let round = 0; round < Number(values.rounds); round++) {
    // Alternated, so neither path always runs first.
    const first = round % 2 === 0 ? "evaluate" : "direct";
    const evaluate = first === "evaluate" ? await viaEvaluate(round) : undefined;
    const direct = await viaDirectSteps(round);
    const evaluated = evaluate ?? await viaEvaluate(round);
    ratios.push(direct.tokensPerSecond / evaluated.tokensPerSecond);
    console.log(`round ${round + 1}: evaluate ${evaluated.tokensPerSecond.toFixed(2)} tok/s (main thread ${evaluated.mainMsPerToken.toFixed(3)} ms a token), `
        + `direct ${direct.tokensPerSecond.toFixed(2)} tok/s (${direct.mainMsPerToken.toFixed(3)} ms); direct / evaluate ${ratios.at(-1)!.toFixed(3)}`);
}
console.log(`direct / evaluate by round: ${ratios.map((ratio) => ratio.toFixed(3)).join(", ")} (median ${median(ratios).toFixed(3)})`);
samplers.forEach((sampler) => sampler.dispose());
await context.dispose();
await model.dispose();

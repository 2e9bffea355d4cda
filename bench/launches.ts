/**
 * Decode speed over separate launches: llama-server and one or more Maple checkouts, each started,
 * timed and stopped in turn, round after round, with llama-bench's decode at the same depth as the
 * floor. bench/speed times long-lived processes side by side; this one answers what it cannot:
 * whether two builds differ, or only two launches (separate processes of one build decode up to a
 * few percent apart here, by where their pages and threads land).
 *
 *   npm run build && node dist/bench/launches.js [--model synthetic:qwen3-0.6b] [--threads 1]
 *       [--rounds 3] [--runs 2] [--parallel 4] [--maple DIR]... [--prompt-tokens 200] [--max-tokens 128]
 *       [--warm-up-tokens 2048] [--swa-full] [--llama-huge-pages]
 *
 * `--maple DIR` (repeatable) is a built checkout of Maple (default: this one); two of them compare
 * builds. Every process's CPU kernel file is checked to be the same. Both servers keep the same
 * sliding-window cache (their window, or every token with `--swa-full`), and each launch is warmed
 * with `--warm-up-tokens` one stream at a time and a round of `--parallel` streams before it is
 * timed (see warmUp). Each one-stream run also reports, a decoded token (after the first), the
 * decode thread's time off the CPU (idle) and the part of it asleep (the rest it waited for a
 * core), and the CPU of the server's threads but llama.cpp's (Linux schedstat); each launch, its
 * resident memory and the part of it in huge pages after the warm-up (smaps_rollup).
 * `--llama-huge-pages` adds a llama-server and a llama-bench that keep their weights in huge pages
 * as Maple does (see inHugePages): what Maple gains from its page sizes apart from what its layers
 * cost.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { defaultConfig } from "../src/config/settings.js";
import { resolveModel } from "../src/models/resolveModel.js";
import { ensureLlamaCppTools, inHugePages, mappedCpuVariant, requireSameKernels, runLlamaBench } from "./llamaCpp.js";
import { freePort, median, repoRoot, runPrompt, waitForHealth } from "./shared.js";
import { parallelAggregate, timeCompletionStream } from "./streamClient.js";

const { values } = parseArgs({
    options: {
        model: { type: "string", default: "synthetic:qwen3-0.6b" },
        threads: { type: "string", default: "1" },
        rounds: { type: "string", default: "3" },
        runs: { type: "string", default: "2" },
        parallel: { type: "string", default: "4" },
        maple: { type: "string", multiple: true },
        "prompt-tokens": { type: "string", default: "200" },
        "max-tokens": { type: "string", default: "128" },
        "context-size": { type: "string", default: "4096" },
        "warm-up-tokens": { type: "string", default: "2048" },
        "swa-full": { type: "boolean", default: false },
        "llama-huge-pages": { type: "boolean", default: false }
    }
});
const threads = values.threads;
const rounds = Number(values.rounds);
const runs = Number(values.runs);
const parallel = Number(values.parallel);
const promptTokens = Number(values["prompt-tokens"]);
const contextSize = Number(values["context-size"]);
const warmUpTokens = Number(values["warm-up-tokens"]);
// Windowed or full, the same on both sides: one against the other measures the cache, not the server.
const swaFull = values["swa-full"] === true;
const llamaHugePages = values["llama-huge-pages"] === true;
const sampling = { max_tokens: Number(values["max-tokens"]), ignore_eos: true, temperature: 0.6, top_p: 0.95, top_k: 20 };

interface Contender {
    name: string;
    start(port: number): ChildProcess;
}

interface Launch {
    /** Median over the launch's runs of one stream's decode rate. */
    decode: number;
    /**
     * Per generated token, the time the busiest thread (one of llama.cpp's) spent off the CPU
     * during a one-stream request's decode, from its first streamed token to its last (the
     * prompt may be evaluated on another thread than the tokens): wall time minus its run time. What
     * the layers above llama.cpp make it wait for. `asleepMsPerToken` is the part it was blocked
     * (a hop through another thread: the next batch not handed over yet); the rest it was
     * runnable and waited for a core (another thread of the server, or the client, on it).
     */
    idleMsPerToken: number;
    asleepMsPerToken: number;
    /** Per generated token, the run time of the server's threads but llama.cpp's (the `--threads` busiest): its HTTP and event-loop work. */
    othersMsPerToken: number;
    aggregate: number;
    ttftMs: number;
    /** Resident memory after the warm-up, and the part of it in transparent huge pages (GB). */
    rssGb: number;
    hugePagesGb: number;
}

const modelsDir = process.env.MAPLE_MODELS_DIR ?? defaultConfig().modelsDir;
const model = await resolveModel(values.model, { modelsDir });
const tools = await ensureLlamaCppTools();

const mapleDirs = values.maple ?? [repoRoot];
const llamaServerArgs = (port: number): string[] => ["-m", model.path, "-t", threads, "-tb", threads, "-c", String(contextSize * parallel),
    "-np", String(parallel), ...(swaFull ? ["--swa-full"] : []), "--port", String(port), "--host", "127.0.0.1", "--no-webui"];
const contenders: Contender[] = [
    { name: "llama-server", start: (port) => spawn(tools.server, llamaServerArgs(port), { stdio: "ignore" }) },
    ...(llamaHugePages ? [{
        name: "llama-server, huge pages",
        start: (port: number) => spawn(tools.server, [...llamaServerArgs(port), ...inHugePages.args], { stdio: "ignore", env: inHugePages.env })
    }] : []),
    ...mapleDirs.map((dir, index) => ({
        name: mapleDirs.length === 1 ? "maple serve" : `maple serve #${index + 1} (${dir})`,
        start: (port: number) => spawn(process.execPath, [`${dir.replace(/\/$/, "")}/bin/maple.cjs`, "serve", "--model", model.path,
            "--port", String(port), "--threads", threads, "--parallel", String(parallel), "--context-size", String(contextSize), "--swa-full", String(swaFull), "--log-level", "warn"],
        { stdio: ["ignore", "ignore", "inherit"] })
    }))
];

interface ThreadTimes {
    runMs: number;
    /** Runnable, waiting for a core. */
    waitMs: number;
}

/**
 * A process's resident memory and its anonymous huge pages (/proc/<pid>/smaps_rollup, Linux), in
 * GB. A launch whose weights got fewer huge pages decodes slower (docs/huge-pages.md), which is
 * one way two launches of one build differ.
 */
async function residentMemory(pid: number): Promise<{ rssGb: number; hugePagesGb: number }> {
    const rollup = await readFile(`/proc/${pid}/smaps_rollup`, "utf8").catch(() => "");
    const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(rollup)?.[1] ?? NaN);
    return { rssGb: kb("Rss") * 1024 / 1e9, hugePagesGb: kb("AnonHugePages") * 1024 / 1e9 };
}

/** Run and run-queue wait time of each of a process's threads, from /proc/<pid>/task/<tid>/schedstat (Linux, ns). */
async function threadTimes(pid: number): Promise<Map<string, ThreadTimes>> {
    const threads = await readdir(`/proc/${pid}/task`);
    const times = await Promise.all(threads.map(async (thread) => {
        const [run, wait] = (await readFile(`/proc/${pid}/task/${thread}/schedstat`, "utf8").catch(() => "")).split(" ").map(Number);
        return [thread, { runMs: run! / 1e6, waitMs: wait! / 1e6 }] as const;
    }));
    return new Map(times.filter(([, times]) => Number.isFinite(times.runMs) && Number.isFinite(times.waitMs)));
}

function stop(child: ChildProcess): Promise<void> {
    return new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
    });
}

/**
 * Decodes `warmUpTokens` one stream at a time, then a round of `--parallel` streams. V8 optimizes
 * Maple's per-token functions only after they have run a while (its main thread's CPU a token on
 * the maple-preview twin: 1.77 ms over a fresh launch's first 256 tokens, 0.89 past 1,800); a
 * server that has been up a while runs warm, and a C++ server has no such start.
 */
async function warmUp(url: string): Promise<void> {
    for (let request = 0; request < Math.ceil(warmUpTokens / sampling.max_tokens); request++) {
        await timeCompletionStream(url, { prompt: runPrompt(300 + request, promptTokens), ...sampling, seed: request + 1 });
    }
    if (parallel > 1) await parallelAggregate(url, parallel, sampling);
}

async function launch(contender: Contender, round: number, kernels: string): Promise<Launch> {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const child = contender.start(port);
    try {
        await waitForHealth(url, child);
        await warmUp(url);
        const memory = await residentMemory(child.pid!);
        const variant = await mappedCpuVariant(child.pid!);
        if (variant !== kernels) throw new Error(`${contender.name} mapped ${variant ?? "no CPU kernel file"}, llama-bench ${kernels}: not comparing`);
        const timings = [];
        const idle = [];
        const asleep = [];
        const others = [];
        // The same prompts and seeds for every contender in a round, fresh ones each round.
        for (let run = 0; run < runs; run++) {
            const index = round * runs + run;
            // From the first streamed token to the end: the prompt's evaluation may run on another thread than the decode.
            let atFirstToken: Promise<Map<string, ThreadTimes>> | undefined;
            let firstTokenAt = 0;
            const timing = await timeCompletionStream(url, { prompt: runPrompt(index, promptTokens), ...sampling, seed: index + 1 }, () => {
                firstTokenAt = performance.now();
                atFirstToken = threadTimes(child.pid!);
            });
            const wallMs = performance.now() - firstTokenAt;
            const after = await threadTimes(child.pid!);
            const before = await atFirstToken!;
            const decodedTokens = timing.completionTokens - 1;
            const spent = [...after].map(([thread, times]) => ({
                runMs: times.runMs - (before.get(thread)?.runMs ?? 0),
                waitMs: times.waitMs - (before.get(thread)?.waitMs ?? 0)
            })).sort((a, b) => b.runMs - a.runMs);
            const busiest = spent[0]!;
            timings.push(timing);
            idle.push((wallMs - busiest.runMs) / decodedTokens);
            asleep.push((wallMs - busiest.runMs - busiest.waitMs) / decodedTokens);
            others.push(spent.slice(Number(threads)).reduce((sum, each) => sum + each.runMs, 0) / decodedTokens);
        }
        return {
            decode: median(timings.map((timing) => timing.decodeTokensPerSecond)),
            idleMsPerToken: median(idle),
            asleepMsPerToken: median(asleep),
            othersMsPerToken: median(others),
            ttftMs: median(timings.map((timing) => timing.ttftMs)),
            aggregate: parallel > 1 ? await parallelAggregate(url, parallel, sampling) : NaN,
            ...memory
        };
    } finally {
        await stop(child);
    }
}

console.log(`model ${values.model} (${model.path}), threads ${threads}, prompt ~${promptTokens} tokens, ${sampling.max_tokens} generated, `
    + `${rounds} rounds of one launch each, ${runs} runs a launch, ${parallel} streams at once, each launch warmed with ${warmUpTokens} tokens, `
    + `sliding-window layers keep ${swaFull ? "every token (--swa-full)" : "their window"}`);
const launches = new Map<string, Launch[]>(contenders.map((each) => [each.name, []]));
const floors: number[] = [];
const hugePageFloors: number[] = [];
for (let round = 0; round < rounds; round++) {
    const bench = await runLlamaBench(tools.bench, model.path, Number(threads), promptTokens, sampling.max_tokens);
    if (llamaHugePages) hugePageFloors.push((await runLlamaBench(tools.bench, model.path, Number(threads), promptTokens, sampling.max_tokens, true)).decodeAtDepthTokensPerSecond);
    if (round === 0) await requireSameKernels([{ name: "llama-bench", pid: 0, variant: bench.cpuVariant }]);
    floors.push(bench.decodeAtDepthTokensPerSecond);
    // Reversed every other round, so that no contender always runs first after llama-bench.
    const order = round % 2 === 0 ? contenders : [...contenders].reverse();
    for (const contender of order) {
        const result = await launch(contender, round, bench.cpuVariant!);
        launches.get(contender.name)!.push(result);
        console.log(`round ${round + 1}: ${contender.name.padEnd(24)} decode ${result.decode.toFixed(1)} tok/s (idle ${result.idleMsPerToken.toFixed(2)} ms/token, `
            + `asleep ${result.asleepMsPerToken.toFixed(2)}, other threads' CPU ${result.othersMsPerToken.toFixed(2)}), ${parallel}-stream ${result.aggregate.toFixed(1)} tok/s, `
            + `TTFT ${result.ttftMs.toFixed(0)} ms, RSS ${result.rssGb.toFixed(2)} GB of which ${result.hugePagesGb.toFixed(2)} in huge pages (llama-bench at depth ${bench.decodeAtDepthTokensPerSecond.toFixed(1)})`);
    }
}

const baseline = launches.get("llama-server")!;
const floor = median(floors);
console.log(`\nmedians over ${rounds} launches each (llama-bench decode at depth ${promptTokens}: ${floor.toFixed(1)} tok/s; runs ${floors.map((each) => each.toFixed(1)).join(", ")}`
    + `${llamaHugePages ? `; in huge pages ${median(hugePageFloors).toFixed(1)} tok/s, runs ${hugePageFloors.map((each) => each.toFixed(1)).join(", ")}` : ""})`);
for (const [name, results] of launches) {
    const decode = median(results.map((each) => each.decode));
    const aggregate = median(results.map((each) => each.aggregate));
    const perRound = results.map((each, round) => (each.decode / baseline[round]!.decode).toFixed(3)).join(", ");
    const perRoundAggregate = results.map((each, round) => (each.aggregate / baseline[round]!.aggregate).toFixed(3)).join(", ");
    console.log(`${name}: decode ${decode.toFixed(1)} tok/s (${(decode / floor).toFixed(3)}× llama-bench, decode thread idle `
        + `${median(results.map((each) => each.idleMsPerToken)).toFixed(2)} ms/token, asleep ${median(results.map((each) => each.asleepMsPerToken)).toFixed(2)}, `
        + `other threads' CPU ${median(results.map((each) => each.othersMsPerToken)).toFixed(2)}), ${parallel}-stream ${aggregate.toFixed(1)} tok/s, `
        + `TTFT ${median(results.map((each) => each.ttftMs)).toFixed(0)} ms; per round vs llama-server: decode ${perRound}, ${parallel}-stream ${perRoundAggregate}`);
}

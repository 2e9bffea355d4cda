/**
 * Issue 4's benchmark, one command, all contenders side by side on the same GGUF and threads:
 * Maple over HTTP (streaming), Maple's engine without HTTP (and the same engine behind a bare
 * node:http stream: the floor any Node server pays per token), llama.cpp's llama-bench and
 * llama-server (built from the source node-llama-cpp ships). Prints figures and Maple / llama.cpp ratios.
 *
 *   npm run build && node dist/bench/speed.js [--model synthetic:qwen3-0.6b] [--threads N]
 *       [--prompt-tokens 200] [--max-tokens 128] [--runs 3] [--parallel 4]
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { availableParallelism } from "node:os";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { defaultConfig } from "../src/config/settings.js";
import { resolveModel } from "../src/models/resolveModel.js";
import { ensureLlamaCppTools, runLlamaBench } from "./llamaCpp.js";
import { benchPrompt, freePort, median, percentile, repoRoot, rssMb, runPrompt, waitForHealth } from "./shared.js";
import { timeCompletionStream, type StreamTiming } from "./streamClient.js";

const { values } = parseArgs({
    options: {
        model: { type: "string", default: "synthetic:qwen3-0.6b" },
        threads: { type: "string", default: String(availableParallelism()) },
        "prompt-tokens": { type: "string", default: "200" },
        "max-tokens": { type: "string", default: "128" },
        runs: { type: "string", default: "3" },
        parallel: { type: "string", default: "4" },
        "context-size": { type: "string", default: "4096" }
    }
});
const threads = Number(values.threads);
const promptTokens = Number(values["prompt-tokens"]);
const maxTokens = Number(values["max-tokens"]);
const runs = Number(values.runs);
const parallel = Number(values.parallel);
const contextSize = Number(values["context-size"]);
// Maple runs as users run it: the `maple` command picks its own libuv pool size. The engine process
// is a plain ES module script, which cannot (the loader starts the pool before its first line), so
// it gets the command's default from here.
const engineEnv = { ...process.env, UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? "1" };

interface ServerFigures {
    ttftColdMs: number;
    ttftCachedMs: number;
    cachedTokens: number | undefined;
    promptTokensPerSecond: number;
    decodeTokensPerSecond: number;
    interTokenP50Ms: number;
    interTokenP99Ms: number;
    parallelAggregateTokensPerSecond: number;
    rssMb: number;
}

const sampling = { max_tokens: maxTokens, ignore_eos: true, temperature: 0.6, top_p: 0.95, top_k: 20 };

/** Decode-phase aggregate: tokens that arrived while every stream was decoding, over that window. */
async function parallelAggregate(url: string): Promise<number> {
    const streams = await Promise.all(Array.from({ length: parallel }, (_, index) =>
        timeCompletionStream(url, { prompt: `Stream ${index}: ${benchPrompt(32)}`, ...sampling, seed: index + 1 })));
    const arrivals = streams.map((stream) => stream.textArrivals);
    const start = Math.max(...arrivals.map((times) => times[0] ?? Infinity));
    const end = Math.min(...arrivals.map((times) => times.at(-1) ?? 0));
    const inWindow = arrivals.reduce((sum, times) => sum + times.filter((at) => at > start && at <= end).length, 0);
    return inWindow / ((end - start) / 1000);
}

interface Contender {
    name: string;
    child: ChildProcess;
    url: string;
    cold: StreamTiming[];
    cached: StreamTiming[];
    aggregates: number[];
}

function contender(name: string, child: ChildProcess, port: number): Contender {
    return { name, child, url: `http://127.0.0.1:${port}`, cold: [], cached: [], aggregates: [] };
}

/** Lets the other server's llama.cpp threads stop spinning before this one is timed. */
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 300));

interface EngineRun {
    ttftMs: number;
    decodeTokensPerSecond: number;
}

/** Maple's engine (bench/engineServer) and its bare node:http stream, one long-lived process. */
interface EngineContender {
    child: ChildProcess;
    url: string;
    runs: EngineRun[];
    bare: StreamTiming[];
}

async function startEngineContender(): Promise<EngineContender> {
    const child = spawn(process.execPath, [`${repoRoot}dist/bench/engineServer.js`, model.path, String(threads), String(parallel), String(contextSize), String(promptTokens), String(maxTokens)],
        { env: engineEnv, stdio: ["ignore", "pipe", "inherit"] });
    const [line] = await once(createInterface({ input: child.stdout! }), "line") as [string];
    const { port } = JSON.parse(line) as { port: number };
    return { child, url: `http://127.0.0.1:${port}`, runs: [], bare: [] };
}

/** One in-process run with the same prompt and seed as the servers' run `run`. */
async function engineRun(engine: EngineContender, run: number): Promise<EngineRun> {
    const response = await fetch(`${engine.url}/engine-run`, { method: "POST", body: JSON.stringify({ run }) });
    if (!response.ok) throw new Error(`engine run ${run}: HTTP ${response.status} ${await response.text()}`);
    return await response.json() as EngineRun;
}

/**
 * Both servers and Maple's engine run at once (they map the same file, so its pages are shared)
 * and are timed in turns, run by run: whatever else the machine does in a minute falls on all
 * alike. (Run-to-run spread on this machine is several percent, more than the differences measured.)
 */
async function measureInTurns(contenders: Contender[], engine: EngineContender): Promise<void> {
    for (const each of [...contenders, engine]) {
        await waitForHealth(each.url, each.child);
        await timeCompletionStream(each.url, { prompt: "warm up", ...sampling, max_tokens: 8 });
    }
    for (let run = 0; run < runs; run++) {
        const prompt = runPrompt(run, promptTokens);
        process.stderr.write(`run ${run + 1}/${runs}: Maple engine, then behind bare node:http\n`);
        await settle();
        engine.runs.push(await engineRun(engine, run));
        await settle();
        engine.bare.push(await timeCompletionStream(engine.url, { prompt, ...sampling, seed: run + 1 }));
        for (const each of contenders) {
            process.stderr.write(`run ${run + 1}/${runs}: ${each.name}\n`);
            await settle();
            each.cold.push(await timeCompletionStream(each.url, { prompt, ...sampling, seed: run + 1 }));
            each.cached.push(await timeCompletionStream(each.url, { prompt, ...sampling, max_tokens: 2, seed: run + 1 }));
        }
    }
    for (let run = 0; run < runs; run++) {
        for (const each of contenders) {
            await settle();
            each.aggregates.push(await parallelAggregate(each.url));
        }
    }
}

async function figures(each: Contender): Promise<ServerFigures> {
    const gaps = each.cold.flatMap((timing) => timing.interTokenMs);
    const ttftColdMs = median(each.cold.map((timing) => timing.ttftMs));
    return {
        ttftColdMs,
        ttftCachedMs: median(each.cached.map((timing) => timing.ttftMs)),
        cachedTokens: each.cached[0]?.cachedTokens,
        promptTokensPerSecond: promptTokens / (ttftColdMs / 1000),
        decodeTokensPerSecond: median(each.cold.map((timing) => timing.decodeTokensPerSecond)),
        interTokenP50Ms: percentile(gaps, 0.5),
        interTokenP99Ms: percentile(gaps, 0.99),
        parallelAggregateTokensPerSecond: median(each.aggregates),
        rssMb: await rssMb(each.child.pid!)
    };
}

function stop(child: ChildProcess): Promise<void> {
    return new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
    });
}

const modelsDir = process.env.MAPLE_MODELS_DIR ?? defaultConfig().modelsDir;
const model = await resolveModel(values.model, { modelsDir });
const tools = await ensureLlamaCppTools();
console.log(`model ${values.model} (${model.path}), threads ${threads}, prompt ~${promptTokens} tokens, ${maxTokens} generated, ${parallel} parallel, median of ${runs}`);

const llamaBench = await runLlamaBench(tools.bench, model.path, threads, promptTokens, maxTokens);

const llamaPort = await freePort();
const llama = contender("llama-server", spawn(tools.server, ["-m", model.path, "-t", String(threads), "-tb", String(threads),
    "-c", String(contextSize * parallel), "-np", String(parallel), "--swa-full", "--port", String(llamaPort), "--host", "127.0.0.1", "--no-webui"],
{ stdio: "ignore" }), llamaPort);
const maplePort = await freePort();
const maple = contender("Maple", spawn(process.execPath, [`${repoRoot}bin/maple.cjs`, "serve", "--model", model.path, "--port", String(maplePort),
    "--threads", String(threads), "--parallel", String(parallel), "--context-size", String(contextSize), "--log-level", "warn"],
{ stdio: ["ignore", "ignore", "inherit"] }), maplePort);
const fixed = (value: number, digits = 1): string => (Number.isFinite(value) ? value.toFixed(digits) : "–");
const engine = await startEngineContender();
let llamaFigures: ServerFigures;
let mapleFigures: ServerFigures;
try {
    await measureInTurns([llama, maple], engine);
    llamaFigures = await figures(llama);
    mapleFigures = await figures(maple);
} finally {
    await Promise.all([stop(llama.child), stop(maple.child), stop(engine.child)]);
}
const engineOnly: EngineRun = {
    ttftMs: median(engine.runs.map((run) => run.ttftMs)),
    decodeTokensPerSecond: median(engine.runs.map((run) => run.decodeTokensPerSecond))
};
/**
 * Milliseconds per token that `timings` adds over the engine, run by run (each run's pair was
 * timed a few seconds apart with the same prompt and seed, so drift over the minutes cancels).
 */
function addedMsPerToken(timings: readonly StreamTiming[]): number[] {
    return timings.map((timing, run) => 1000 / timing.decodeTokensPerSecond - 1000 / engine.runs[run]!.decodeTokensPerSecond);
}
const describeAdded = (added: readonly number[]): string =>
    `${fixed(median(added), 3)} ms (median of ${added.length} paired runs; ${fixed(Math.min(...added), 3)} to ${fixed(Math.max(...added), 3)})`;
const mapleAdded = addedMsPerToken(maple.cold);
const bareAdded = addedMsPerToken(engine.bare);

const [l, m] = [llamaFigures, mapleFigures];
const rows: [string, string, string, string, string][] = [
    ["figure", "llama-bench", "llama-server", "Maple engine", "Maple HTTP"],
    ["prompt tok/s", fixed(llamaBench.promptTokensPerSecond), fixed(l.promptTokensPerSecond), "", fixed(m.promptTokensPerSecond)],
    ["decode tok/s, empty context", fixed(llamaBench.decodeTokensPerSecond), "", "", ""],
    ["decode tok/s after prompt", fixed(llamaBench.decodeAtDepthTokensPerSecond), fixed(l.decodeTokensPerSecond), fixed(engineOnly.decodeTokensPerSecond), fixed(m.decodeTokensPerSecond)],
    ["TTFT cold ms", "", fixed(l.ttftColdMs), fixed(engineOnly.ttftMs), fixed(m.ttftColdMs)],
    ["TTFT cached ms", "", fixed(l.ttftCachedMs), "", fixed(m.ttftCachedMs)],
    ["cached tokens", "", String(l.cachedTokens ?? "–"), "", String(m.cachedTokens ?? "–")],
    [`${parallel}-stream aggregate tok/s`, "", fixed(l.parallelAggregateTokensPerSecond), "", fixed(m.parallelAggregateTokensPerSecond)],
    ["inter-token p50 ms", "", fixed(l.interTokenP50Ms, 2), "", fixed(m.interTokenP50Ms, 2)],
    ["inter-token p99 ms", "", fixed(l.interTokenP99Ms, 2), "", fixed(m.interTokenP99Ms, 2)],
    ["RSS MB", "", fixed(l.rssMb, 0), "", fixed(m.rssMb, 0)]
];
console.log();
for (const row of rows) console.log(row[0].padEnd(28) + row.slice(1).map((cell) => cell.padStart(14)).join(""));
const ratio = (a: number, b: number): string => `${(a / b).toFixed(3)}×`;
console.log("\nratios:");
console.log(`  Maple HTTP decode vs llama-server ${ratio(m.decodeTokensPerSecond, l.decodeTokensPerSecond)}`);
console.log(`  Maple ${parallel}-stream aggregate vs llama-server ${ratio(m.parallelAggregateTokensPerSecond, l.parallelAggregateTokensPerSecond)}`);
console.log(`  Maple TTFT cold ${ratio(m.ttftColdMs, l.ttftColdMs)}, cached ${ratio(m.ttftCachedMs, l.ttftCachedMs)} of llama-server's (lower is better)`);
console.log(`  Maple engine decode vs llama-bench at the same depth ${ratio(engineOnly.decodeTokensPerSecond, llamaBench.decodeAtDepthTokensPerSecond)}, in an empty context ${ratio(engineOnly.decodeTokensPerSecond, llamaBench.decodeTokensPerSecond)}`);
console.log(`  llama-server decode vs llama-bench at the same depth ${ratio(l.decodeTokensPerSecond, llamaBench.decodeAtDepthTokensPerSecond)}`);
console.log(`  Maple HTTP prompt tok/s vs llama-bench ${ratio(m.promptTokensPerSecond, llamaBench.promptTokensPerSecond)}`);
console.log(`  HTTP cost per token over Maple's engine: ${describeAdded(mapleAdded)}; from the medians above ${fixed(1000 / m.decodeTokensPerSecond - 1000 / engineOnly.decodeTokensPerSecond, 3)} ms`);
console.log(`    the same engine behind bare node:http (the floor for a Node server here): ${describeAdded(bareAdded)}`);
console.log(`    Maple's own layers over that floor: ${describeAdded(mapleAdded.map((added, run) => added - bareAdded[run]!))}`);

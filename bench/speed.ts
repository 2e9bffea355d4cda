/**
 * Issue 4's benchmark, one command, all contenders side by side on the same GGUF and threads:
 * Maple over HTTP (streaming), Maple's engine without HTTP (and the same engine behind a bare
 * node:http stream: the floor any Node server pays per token), llama.cpp's llama-bench and
 * llama-server (built from the source node-llama-cpp ships). Prints figures and Maple / llama.cpp ratios.
 *
 *   npm run build && node dist/bench/speed.js [--model synthetic:qwen3-0.6b] [--threads N]
 *       [--prompt-tokens 200] [--max-tokens 128] [--runs 3] [--cost-runs 20] [--parallel 4]
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { availableParallelism } from "node:os";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { defaultConfig } from "../src/config/settings.js";
import { resolveModel } from "../src/models/resolveModel.js";
import { ensureLlamaCppTools, requireSameKernels, runLlamaBench } from "./llamaCpp.js";
import { freePort, median, percentile, repoRoot, rssMb, runPrompt, waitForHealth } from "./shared.js";
import { parallelAggregate, timeCompletionStream, type StreamTiming } from "./streamClient.js";

const { values } = parseArgs({
    options: {
        model: { type: "string", default: "synthetic:qwen3-0.6b" },
        threads: { type: "string", default: String(availableParallelism()) },
        "prompt-tokens": { type: "string", default: "200" },
        "max-tokens": { type: "string", default: "128" },
        runs: { type: "string", default: "3" },
        "cost-runs": { type: "string", default: "20" },
        parallel: { type: "string", default: "4" },
        "context-size": { type: "string", default: "4096" }
    }
});
const threads = Number(values.threads);
const promptTokens = Number(values["prompt-tokens"]);
const maxTokens = Number(values["max-tokens"]);
const runs = Number(values.runs);
const costRuns = Number(values["cost-runs"]);
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

/** Maple's engine (bench/engineServer), its bare node:http stream and Maple's app over it: one long-lived process. */
interface EngineContender {
    child: ChildProcess;
    url: string;
    /** Maple's own HTTP app over the same engine. */
    mapleUrl: string;
    runs: EngineRun[];
}

async function startEngineContender(): Promise<EngineContender> {
    const child = spawn(process.execPath, [`${repoRoot}dist/bench/engineServer.js`, model.path, String(threads), String(parallel), String(contextSize), String(promptTokens), String(maxTokens)],
        { env: engineEnv, stdio: ["ignore", "pipe", "inherit"] });
    const [line] = await once(createInterface({ input: child.stdout! }), "line") as [string];
    const { port, maplePort } = JSON.parse(line) as { port: number; maplePort: number };
    return { child, url: `http://127.0.0.1:${port}`, mapleUrl: `http://127.0.0.1:${maplePort}`, runs: [] };
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
    await timeCompletionStream(engine.mapleUrl, { prompt: "warm up", ...sampling, max_tokens: 8 });
    await requireSameKernels([
        { name: "llama-bench", pid: 0, variant: llamaBench.cpuVariant },
        ...contenders.map((each) => ({ name: each.name, pid: each.child.pid! })),
        { name: "Maple engine", pid: engine.child.pid! }
    ]);
    for (let run = 0; run < runs; run++) {
        const prompt = runPrompt(run, promptTokens);
        process.stderr.write(`run ${run + 1}/${runs}: Maple engine\n`);
        await settle();
        engine.runs.push(await engineRun(engine, run));
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
            each.aggregates.push(await parallelAggregate(each.url, parallel, sampling));
        }
    }
}

/** One round of the HTTP cost: milliseconds per decoded token of each path, same prompt and seed. */
interface CostRound {
    engine: number;
    /** The engine alone again, at the other end of the round: what the method reports for no difference at all. */
    engineAgain: number;
    bare: number;
    /** Maple's app in the engine's process. */
    mapleApp: number;
    /** `maple serve`, its own process. */
    mapleServe: number;
}

/**
 * HTTP's cost per token over the engine is a few tenths of a millisecond, against run-to-run swings
 * of a millisecond or more here, and separate processes of the same code decode up to ~0.8 ms/token
 * apart (measured: one launch of `maple serve` 0.5 ms/token faster than the engine process, the next
 * 0.8 ms slower). So it gets rounds of its own, without llama-server, in the engine's process: the
 * engine alone, the bare node:http stream and Maple's own app, back to back with the same prompt and
 * seed, then `maple serve` for comparison, and the engine alone once more, so that the rounds also
 * show what the method reports for identical work (measured on maple-preview over 16 such rounds:
 * ±0.2 ms); the order is reversed every other round so that no side is always timed first. Each
 * round's differences are paired; medians over the rounds are the figures.
 */
async function measureHttpCost(maple: Contender, engine: EngineContender): Promise<CostRound[]> {
    const rounds: CostRound[] = [];
    const msPerToken = (tokensPerSecond: number): number => 1000 / tokensPerSecond;
    for (let round = 0; round < costRuns; round++) {
        process.stderr.write(`HTTP cost round ${round + 1}/${costRuns}\n`);
        // Prompts the main runs did not use, so each is as cold for the servers as for the engine.
        const run = runs + round;
        const stream = async (url: string): Promise<number> =>
            msPerToken((await timeCompletionStream(url, { prompt: runPrompt(run, promptTokens), ...sampling, seed: run + 1 })).decodeTokensPerSecond);
        const engineAlone = async (): Promise<number> => msPerToken((await engineRun(engine, run)).decodeTokensPerSecond);
        const measured: Partial<CostRound> = {};
        const steps: [keyof CostRound, () => Promise<number>][] = [
            ["engine", engineAlone],
            ["bare", () => stream(engine.url)],
            ["mapleApp", () => stream(engine.mapleUrl)],
            ["mapleServe", () => stream(maple.url)],
            ["engineAgain", engineAlone]
        ];
        for (const [name, step] of round % 2 === 0 ? steps : steps.reverse()) {
            await settle();
            measured[name] = await step();
        }
        rounds.push(measured as CostRound);
    }
    return rounds;
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
let costRounds: CostRound[];
try {
    await measureInTurns([llama, maple], engine);
    costRounds = await measureHttpCost(maple, engine);
    llamaFigures = await figures(llama);
    mapleFigures = await figures(maple);
} finally {
    await Promise.all([stop(llama.child), stop(maple.child), stop(engine.child)]);
}
const engineOnly: EngineRun = {
    ttftMs: median(engine.runs.map((run) => run.ttftMs)),
    decodeTokensPerSecond: median(engine.runs.map((run) => run.decodeTokensPerSecond))
};
/** The rounds' paired differences `of` − `over`, in ms per token: median, interquartile range, and the difference of the two medians. */
function describeCost(of: keyof CostRound, over: keyof CostRound): string {
    const paired = costRounds.map((round) => round[of] - round[over]);
    const medians = median(costRounds.map((round) => round[of])) - median(costRounds.map((round) => round[over]));
    return `${fixed(median(paired), 3)} ms (median of ${paired.length} paired rounds, interquartile ${fixed(percentile(paired, 0.25), 2)} to ${fixed(percentile(paired, 0.75), 2)}; difference of the medians ${fixed(medians, 3)})`;
}

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
console.log("  HTTP cost per token over Maple's engine, all in the engine's process:");
console.log(`    Maple's HTTP app: ${describeCost("mapleApp", "engine")}`);
console.log(`    bare node:http (the floor for a Node server here): ${describeCost("bare", "engine")}`);
console.log(`    Maple's own layers over that floor: ${describeCost("mapleApp", "bare")}`);
console.log(`  maple serve (its own process) over the engine's process: ${describeCost("mapleServe", "engine")}`);
console.log(`  the engine again over the engine (the method's resolution: identical work, timed at either end of each round): ${describeCost("engineAgain", "engine")}`);

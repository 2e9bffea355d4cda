/**
 * Issue 4's benchmark, one command, all contenders side by side on the same GGUF and threads:
 * Maple over HTTP (streaming), Maple's engine without HTTP, llama.cpp's llama-bench and
 * llama-server (built from the source node-llama-cpp ships). Prints figures and Maple / llama.cpp ratios.
 *
 *   npm run build && node dist/bench/speed.js [--model synthetic:qwen3-0.6b] [--threads N]
 *       [--prompt-tokens 200] [--max-tokens 128] [--runs 3] [--parallel 4]
 */
import { spawn, type ChildProcess } from "node:child_process";
import { availableParallelism } from "node:os";
import { parseArgs } from "node:util";
import { defaultConfig } from "../src/config/settings.js";
import { resolveModel } from "../src/models/resolveModel.js";
import { ensureLlamaCppTools, runLlamaBench } from "./llamaCpp.js";
import { benchPrompt, freePort, median, percentile, repoRoot, rssMb, runJsonChild, waitForHealth } from "./shared.js";
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
const childEnv = { ...process.env, UV_THREADPOOL_SIZE: "1" };

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
    const arrivals: number[][] = [];
    const streams = Array.from({ length: parallel }, async (_, index) => {
        const times: number[] = [];
        arrivals.push(times);
        const response = await fetch(`${url}/v1/completions`, {
            method: "POST", headers: { "content-type": "application/json" },
            body: JSON.stringify({ prompt: `Stream ${index}: ${benchPrompt(32)}`, ...sampling, seed: index + 1, stream: true })
        });
        const reader = response.body!.getReader();
        for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            const now = performance.now();
            const events = Buffer.from(value).toString().split("\n\n").filter((event) => event.startsWith("data: {") && event.includes("\"text\":\"") && !event.includes("\"text\":\"\""));
            for (let i = 0; i < events.length; i++) times.push(now);
        }
    });
    await Promise.all(streams);
    const start = Math.max(...arrivals.map((times) => times[0] ?? Infinity));
    const end = Math.min(...arrivals.map((times) => times.at(-1) ?? 0));
    const inWindow = arrivals.reduce((sum, times) => sum + times.filter((at) => at > start && at <= end).length, 0);
    return inWindow / ((end - start) / 1000);
}

async function measureServer(name: string, child: ChildProcess, url: string): Promise<ServerFigures> {
    await waitForHealth(url, child);
    process.stderr.write(`measuring ${name}\n`);
    await timeCompletionStream(url, { prompt: "warm up", ...sampling, max_tokens: 8 });
    const cold: StreamTiming[] = [];
    const cached: StreamTiming[] = [];
    for (let run = 0; run < runs; run++) {
        // A different first token each run: nothing of the previous run's prompt is reused.
        const prompt = `Run ${run}: ${benchPrompt(promptTokens)}`;
        cold.push(await timeCompletionStream(url, { prompt, ...sampling, seed: run + 1 }));
        cached.push(await timeCompletionStream(url, { prompt, ...sampling, max_tokens: 2, seed: run + 1 }));
    }
    const aggregate = await parallelAggregate(url);
    const gaps = cold.flatMap((timing) => timing.interTokenMs);
    const ttftColdMs = median(cold.map((timing) => timing.ttftMs));
    return {
        ttftColdMs,
        ttftCachedMs: median(cached.map((timing) => timing.ttftMs)),
        cachedTokens: cached[0]?.cachedTokens,
        promptTokensPerSecond: promptTokens / (ttftColdMs / 1000),
        decodeTokensPerSecond: median(cold.map((timing) => timing.decodeTokensPerSecond)),
        interTokenP50Ms: percentile(gaps, 0.5),
        interTokenP99Ms: percentile(gaps, 0.99),
        parallelAggregateTokensPerSecond: aggregate,
        rssMb: await rssMb(child.pid!)
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
const engineOnly = await runJsonChild<{ ttftMs: number; decodeTokensPerSecond: number }>(
    [`${repoRoot}dist/bench/mapleEngine.js`, model.path, String(threads), String(promptTokens), String(maxTokens), String(runs)], childEnv);

const llamaPort = await freePort();
const llamaServer = spawn(tools.server, ["-m", model.path, "-t", String(threads), "-tb", String(threads), "-c", String(contextSize * parallel),
    "-np", String(parallel), "--swa-full", "--port", String(llamaPort), "--host", "127.0.0.1", "--no-webui"], { stdio: "ignore" });
let llama: ServerFigures;
try {
    llama = await measureServer("llama-server", llamaServer, `http://127.0.0.1:${llamaPort}`);
} finally {
    await stop(llamaServer);
}

const maplePort = await freePort();
const mapleServer = spawn(process.execPath, [`${repoRoot}bin/maple.js`, "serve", "--model", model.path, "--port", String(maplePort),
    "--threads", String(threads), "--parallel", String(parallel), "--context-size", String(contextSize), "--log-level", "warn"],
{ env: childEnv, stdio: ["ignore", "ignore", "inherit"] });
let maple: ServerFigures;
try {
    maple = await measureServer("Maple", mapleServer, `http://127.0.0.1:${maplePort}`);
} finally {
    await stop(mapleServer);
}

const fixed = (value: number, digits = 1): string => (Number.isFinite(value) ? value.toFixed(digits) : "–");
const rows: [string, string, string, string, string][] = [
    ["figure", "llama-bench", "llama-server", "Maple engine", "Maple HTTP"],
    ["prompt tok/s", fixed(llamaBench.promptTokensPerSecond), fixed(llama.promptTokensPerSecond), "", fixed(maple.promptTokensPerSecond)],
    ["decode tok/s", fixed(llamaBench.decodeTokensPerSecond), fixed(llama.decodeTokensPerSecond), fixed(engineOnly.decodeTokensPerSecond), fixed(maple.decodeTokensPerSecond)],
    ["TTFT cold ms", "", fixed(llama.ttftColdMs), fixed(engineOnly.ttftMs), fixed(maple.ttftColdMs)],
    ["TTFT cached ms", "", fixed(llama.ttftCachedMs), "", fixed(maple.ttftCachedMs)],
    ["cached tokens", "", String(llama.cachedTokens ?? "–"), "", String(maple.cachedTokens ?? "–")],
    [`${parallel}-stream aggregate tok/s`, "", fixed(llama.parallelAggregateTokensPerSecond), "", fixed(maple.parallelAggregateTokensPerSecond)],
    ["inter-token p50 ms", "", fixed(llama.interTokenP50Ms, 2), "", fixed(maple.interTokenP50Ms, 2)],
    ["inter-token p99 ms", "", fixed(llama.interTokenP99Ms, 2), "", fixed(maple.interTokenP99Ms, 2)],
    ["RSS MB", "", fixed(llama.rssMb, 0), "", fixed(maple.rssMb, 0)]
];
console.log();
for (const row of rows) console.log(row[0].padEnd(26) + row.slice(1).map((cell) => cell.padStart(14)).join(""));
const ratio = (a: number, b: number): string => `${(a / b).toFixed(3)}×`;
console.log("\nratios, Maple HTTP / llama.cpp:");
console.log(`  decode vs llama-server ${ratio(maple.decodeTokensPerSecond, llama.decodeTokensPerSecond)}, vs llama-bench ${ratio(maple.decodeTokensPerSecond, llamaBench.decodeTokensPerSecond)}`);
console.log(`  ${parallel}-stream aggregate vs llama-server ${ratio(maple.parallelAggregateTokensPerSecond, llama.parallelAggregateTokensPerSecond)}`);
console.log(`  TTFT cold ${ratio(maple.ttftColdMs, llama.ttftColdMs)}, cached ${ratio(maple.ttftCachedMs, llama.ttftCachedMs)} (lower is better)`);
console.log(`  prompt tok/s vs llama-bench ${ratio(maple.promptTokensPerSecond, llamaBench.promptTokensPerSecond)}`);
console.log(`  HTTP cost per token over Maple's engine: ${fixed(1000 / maple.decodeTokensPerSecond - 1000 / engineOnly.decodeTokensPerSecond, 3)} ms`);

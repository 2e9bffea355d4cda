/**
 * Issue 2's benchmark: tokens/s of Maple's /v1/completions (streaming, over HTTP) next to raw
 * node-llama-cpp on the same GGUF file, threads and sampling. Each side runs in its own process.
 *
 *   npm run build && node dist/bench/completions.js [--model synthetic:maple-preview] [--threads N]
 *       [--prompt-tokens 200] [--max-tokens 128] [--runs 3]
 */
import { spawn } from "node:child_process";
import { availableParallelism } from "node:os";
import { parseArgs } from "node:util";
import { defaultConfig } from "../src/config/settings.js";
import { resolveModel } from "../src/models/resolveModel.js";
import { benchPrompt, freePort, median, repoRoot, rssMb, runJsonChild, waitForHealth } from "./shared.js";
import { timeCompletionStream } from "./streamClient.js";

const { values } = parseArgs({
    options: {
        model: { type: "string", default: "synthetic:maple-preview" },
        threads: { type: "string", default: String(availableParallelism()) },
        "prompt-tokens": { type: "string", default: "200" },
        "max-tokens": { type: "string", default: "128" },
        runs: { type: "string", default: "3" }
    }
});
const threads = values.threads;
const maxTokens = Number(values["max-tokens"]);
const runs = Number(values.runs);
const modelsDir = process.env.MAPLE_MODELS_DIR ?? defaultConfig().modelsDir;
// The raw node-llama-cpp script is an ES module, which cannot set its own libuv pool size (the
// loader starts the pool before its first line): it gets the `maple` command's default from here.
const env = { UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? "1" };

console.log(`model ${values.model}, threads ${threads}, prompt ~${values["prompt-tokens"]} tokens, ${maxTokens} tokens generated, median of ${runs} runs`);
const model = await resolveModel(values.model, {
    modelsDir,
    onProgress: (work, done, total) => process.stderr.write(`\r${work} ${(100 * done / Math.max(total, 1)).toFixed(0)}%   `)
});

const raw = await runJsonChild<{ promptTokens: number; ttftMs: number; decodeTokensPerSecond: number }>(
    [`${repoRoot}dist/bench/rawNodeLlamaCpp.js`, model.path, threads, values["prompt-tokens"], String(maxTokens), String(runs)], env);

const port = await freePort();
const server = spawn(process.execPath, [`${repoRoot}bin/maple.cjs`, "serve", "--model", model.path, "--port", String(port),
    "--threads", threads, "--parallel", "1", "--context-size", "4096", "--log-level", "warn"],
{ stdio: ["ignore", "ignore", "inherit"] });
const url = `http://127.0.0.1:${port}`;
try {
    await waitForHealth(url, server);
    const maple: { ttftMs: number; decodeTokensPerSecond: number }[] = [];
    for (let run = 0; run < runs; run++) {
        // A different first token each run, so no run reuses the previous run's cached prompt.
        const prompt = `${run} ${benchPrompt(Number(values["prompt-tokens"]))}`;
        const timing = await timeCompletionStream(url, { prompt, max_tokens: maxTokens, ignore_eos: true, temperature: 0.6, seed: run + 1 });
        maple.push({ ttftMs: timing.ttftMs, decodeTokensPerSecond: timing.decodeTokensPerSecond });
    }
    const mapleDecode = median(maple.map((r) => r.decodeTokensPerSecond));
    const mapleTtft = median(maple.map((r) => r.ttftMs));
    const rss = await rssMb(server.pid!);
    const row = (name: string, ttft: number, decode: number): string => `${name.padEnd(34)} ${ttft.toFixed(0).padStart(8)} ms ${decode.toFixed(2).padStart(10)} tok/s`;
    console.log(`\n${"".padEnd(34)} ${"TTFT".padStart(11)} ${"decode".padStart(16)}   (prompt ${raw.promptTokens} tokens)`);
    console.log(row("raw node-llama-cpp", raw.ttftMs, raw.decodeTokensPerSecond));
    console.log(row("Maple /v1/completions (HTTP, SSE)", mapleTtft, mapleDecode));
    console.log(`ratio Maple / raw: decode ${(mapleDecode / raw.decodeTokensPerSecond).toFixed(3)}×, TTFT ${(mapleTtft / raw.ttftMs).toFixed(3)}×; Maple server RSS ${rss.toFixed(0)} MB`);
} finally {
    server.kill("SIGTERM");
}

/**
 * Issue 28's embeddings benchmark: embeddings per second of Maple's /v1/embeddings against
 * llama-server --embedding (built from the llama.cpp source node-llama-cpp ships, on its kernel
 * files) on the same GGUF, for requests of 1, 16 and 128 inputs of ~100 tokens. The two servers
 * run one after the other, each with the machine to itself.
 *
 *   npm run build && node dist/bench/embeddings.js [--model synthetic:qwen3-embedding-0.6b] [--threads N]
 *       [--sizes 1,16,128] [--runs 3] [--input-tokens 100]
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { availableParallelism } from "node:os";
import { parseArgs } from "node:util";
import { defaultConfig } from "../src/config/settings.js";
import { resolveModel } from "../src/models/resolveModel.js";
import { ensureLlamaCppTools, mappedCpuVariant, requireSameKernels } from "./llamaCpp.js";
import { benchPrompt, freePort, median, repoRoot, rssMb, waitForHealth } from "./shared.js";

const { values } = parseArgs({
    options: {
        model: { type: "string", default: "synthetic:qwen3-embedding-0.6b" },
        threads: { type: "string", default: String(availableParallelism()) },
        sizes: { type: "string", default: "1,16,128" },
        runs: { type: "string", default: "3" },
        "input-tokens": { type: "string", default: "100" }
    }
});
const threads = values.threads;
const sizes = values.sizes.split(",").map(Number);
const runs = Number(values.runs);
const modelsDir = process.env.MAPLE_MODELS_DIR ?? defaultConfig().modelsDir;
const model = await resolveModel(values.model, { modelsDir });
const tools = await ensureLlamaCppTools();
console.log(`model ${values.model}, threads ${threads}, inputs of ~${values["input-tokens"]} tokens, median of ${runs} runs`);

/** Distinct inputs (a different first word each), so nothing is served from a cache. */
const inputs = (count: number, run: number): string[] => Array.from({ length: count }, (_, index) => `${run}-${index} ${benchPrompt(Number(values["input-tokens"]))}`);

/** Embeddings per second of each request size against `url`, the median of `runs` requests. */
async function measure(url: string): Promise<Map<number, number>> {
    const figures = new Map<number, number>();
    for (const size of sizes) {
        const rates: number[] = [];
        for (let run = 0; run < runs; run++) {
            const startedAt = performance.now();
            const response = await fetch(`${url}/v1/embeddings`, {
                method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ input: inputs(size, run), encoding_format: "float" })
            });
            const body = await response.json() as { data?: unknown[] };
            if (response.status !== 200 || body.data?.length !== size) throw new Error(`${url}: ${response.status} ${JSON.stringify(body).slice(0, 300)}`);
            rates.push(size / ((performance.now() - startedAt) / 1000));
        }
        figures.set(size, median(rates));
    }
    return figures;
}

async function stop(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null) return;
    child.kill("SIGTERM");
    await once(child, "exit");
}

const contextSize = String(Math.max(512, Number(values["input-tokens"]) * 4));
const llamaPort = await freePort();
const llama = spawn(tools.server, ["-m", model.path, "--embedding", "-t", threads, "-tb", threads, "-c", contextSize, "-np", "1",
    "-b", contextSize, "-ub", contextSize, "--port", String(llamaPort), "--host", "127.0.0.1", "--no-webui"], { stdio: "ignore" });
let llamaFigures: Map<number, number>;
let llamaRss: number;
let llamaVariant: string | undefined;
try {
    await waitForHealth(`http://127.0.0.1:${llamaPort}`, llama);
    llamaFigures = await measure(`http://127.0.0.1:${llamaPort}`);
    llamaRss = await rssMb(llama.pid!);
    llamaVariant = await mappedCpuVariant(llama.pid!);
} finally {
    await stop(llama);
}

const maplePort = await freePort();
const maple = spawn(process.execPath, [`${repoRoot}bin/maple.cjs`, "serve", "--model", `embed=${model.path}`, "--port", String(maplePort),
    "--threads", threads, "--context-size", contextSize, "--batch-size", contextSize, "--log-level", "warn"], { stdio: ["ignore", "ignore", "inherit"] });
let mapleFigures: Map<number, number>;
let mapleRss: number;
try {
    await waitForHealth(`http://127.0.0.1:${maplePort}`, maple);
    mapleFigures = await measure(`http://127.0.0.1:${maplePort}`);
    mapleRss = await rssMb(maple.pid!);
    await requireSameKernels([{ name: "llama-server", pid: llama.pid!, variant: llamaVariant }, { name: "Maple", pid: maple.pid! }]);
} finally {
    await stop(maple);
}

console.log(`\n${"inputs per request".padEnd(20)} ${"llama-server".padStart(14)} ${"Maple".padStart(14)} ${"ratio".padStart(8)}`);
for (const size of sizes) {
    const theirs = llamaFigures.get(size) ?? NaN;
    const ours = mapleFigures.get(size) ?? NaN;
    console.log(`${String(size).padEnd(20)} ${`${theirs.toFixed(1)}/s`.padStart(14)} ${`${ours.toFixed(1)}/s`.padStart(14)} ${`${(ours / theirs).toFixed(2)}×`.padStart(8)}`);
}
console.log(`RSS: llama-server ${llamaRss.toFixed(0)} MB, Maple ${mapleRss.toFixed(0)} MB`);

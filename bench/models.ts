/**
 * Issue 28's model benchmarks. Part 1, in this process through Maple's own server, loader and
 * model registry: the time to load each synthetic twin (resolve the spec, read its GGUF header,
 * load the weights, create the context and scheduler or the embedding context: what a request
 * naming an unloaded model waits for) and to unload it (free the engine), the median of `--runs`.
 * Part 2: the RSS of a `maple serve` process with one, two and three models loaded (qwen3-0.6b,
 * then qwen3-tiny, then qwen3-embedding-0.6b), each after one request to every model.
 *
 *   npm run build && UV_THREADPOOL_SIZE=1 node dist/bench/models.js [--threads 1] [--runs 3] [--include-preview] [--context-size 4096]
 *
 * The twins' files are written once into MAPLE_MODELS_DIR (else Maple's models directory) and
 * read from the page cache afterwards: the load times are warm-cache times. maple-preview
 * (5.45 GB) only with --include-preview.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { parseArgs } from "node:util";
import { defaultConfig } from "../src/config/settings.js";
import type { ModelEntry } from "../src/core/modelRegistry.js";
import { ensureSyntheticModel } from "../src/models/synthetic/index.js";
import { startServer } from "../src/server/startServer.js";
import { createLogger } from "../src/server/logger.js";
import { freePort, median, repoRoot, rssMb, waitForHealth } from "./shared.js";

const { values } = parseArgs({
    options: {
        threads: { type: "string", default: "1" },
        runs: { type: "string", default: "3" },
        "include-preview": { type: "boolean", default: false },
        "context-size": { type: "string", default: "4096" }
    }
});
const threads = Number(values.threads);
const runs = Number(values.runs);
const contextSize = Number(values["context-size"]);
const modelsDir = process.env.MAPLE_MODELS_DIR ?? defaultConfig().modelsDir;
const twins = ["maple-tiny", "qwen3-tiny", "qwen3-0.6b", "qwen3-embedding-0.6b", ...(values["include-preview"] ? ["maple-preview"] : [])];
console.log(`threads ${threads}, context ${contextSize}, ${runs} runs each, models in ${modelsDir}`);
for (const name of twins) await ensureSyntheticModel(name, modelsDir);

/** Load and unload times (seconds) of each twin, through one in-process server that serves them all and holds one at a time. */
async function loadTimes(): Promise<Map<string, { load: number; unload: number }>> {
    const server = await startServer(defaultConfig({
        model: twins.map((name) => `${name}=synthetic:${name}`).join(","), modelsDir, port: 0, host: "127.0.0.1", threads, contextSize, parallel: 1,
        maxLoadedModels: 1, pinDefaultModel: false, keepAliveSeconds: -1, logLevel: "error"
    }), { logger: createLogger("error", process.stderr) });
    const figures = new Map<string, { load: number; unload: number }>();
    try {
        await server.models.whenStarted();
        const signal = new AbortController().signal;
        const unload = async (entry: ModelEntry): Promise<number> => {
            const startedAt = performance.now();
            if (!await server.models.unloadIdle(entry)) throw new Error(`${entry.id} was not loaded and idle`);
            return (performance.now() - startedAt) / 1000;
        };
        // The default loaded at start: unloaded first, so every model's load below starts from nothing loaded.
        await unload(server.models.default);
        for (const name of twins) {
            const entry = server.models.find(name)!;
            const loads: number[] = [];
            const unloads: number[] = [];
            for (let run = 0; run < runs; run++) {
                const startedAt = performance.now();
                // Its purpose is known once its header is read; the twins' names tell it before.
                const use = name.includes("embedding") ? await server.models.use(name, "embedding", signal) : await server.models.use(name, "chat", signal);
                loads.push((performance.now() - startedAt) / 1000);
                use.release();
                unloads.push(await unload(entry));
            }
            figures.set(name, { load: median(loads), unload: median(unloads) });
            console.log(`${name}: load ${median(loads).toFixed(2)} s, unload ${median(unloads).toFixed(3)} s`);
        }
    } finally {
        await server.close();
    }
    return figures;
}

async function stop(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null) return;
    child.kill("SIGTERM");
    await once(child, "exit");
}

/** RSS (MB) of `maple serve` with `specs` loaded, after one request to each. */
async function servedRss(specs: readonly string[]): Promise<number> {
    const port = await freePort();
    const args = [`${repoRoot}bin/maple.cjs`, "serve", ...specs.flatMap((spec) => ["--model", spec]), "--port", String(port), "--threads", String(threads),
        "--context-size", String(contextSize), "--max-loaded-models", String(specs.length), "--log-level", "warn"];
    const child = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, MAPLE_MODELS_DIR: modelsDir } });
    try {
        const url = `http://127.0.0.1:${port}`;
        await waitForHealth(url, child);
        for (const spec of specs) {
            const name = spec.split("=")[0]!;
            const embedding = name.includes("embed");
            const response = await fetch(`${url}${embedding ? "/v1/embeddings" : "/v1/completions"}`, {
                method: "POST", headers: { "content-type": "application/json" },
                body: JSON.stringify(embedding ? { model: name, input: "warm the model up" } : { model: name, prompt: "Warm the model up:", max_tokens: 8 })
            });
            if (response.status !== 200) throw new Error(`${name}: ${response.status} ${await response.text()}`);
        }
        const listed = await (await fetch(`${url}/v1/models`)).json() as { data: { id: string; loaded: boolean }[] };
        if (listed.data.filter((model) => model.loaded).length !== specs.length) throw new Error(`not all loaded: ${JSON.stringify(listed.data)}`);
        return await rssMb(child.pid!);
    } finally {
        await stop(child);
    }
}

const times = await loadTimes();
const served = ["qwen3-0.6b=synthetic:qwen3-0.6b", "qwen3-tiny=synthetic:qwen3-tiny", "embed=synthetic:qwen3-embedding-0.6b"];
const rss: number[] = [];
for (let count = 1; count <= served.length; count++) {
    rss.push(await servedRss(served.slice(0, count)));
    console.log(`maple serve with ${served.slice(0, count).map((spec) => spec.split("=")[0]).join(" + ")}: RSS ${rss.at(-1)!.toFixed(0)} MB`);
}

console.log(`\n${"model".padEnd(22)} ${"load".padStart(8)} ${"unload".padStart(8)}`);
for (const [name, figure] of times) console.log(`${name.padEnd(22)} ${`${figure.load.toFixed(2)} s`.padStart(8)} ${`${figure.unload.toFixed(3)} s`.padStart(8)}`);
console.log(`\n${"models loaded".padEnd(44)} ${"RSS".padStart(8)}`);
rss.forEach((megabytes, index) => console.log(`${served.slice(0, index + 1).map((spec) => spec.split("=")[0]).join(" + ").padEnd(44)} ${`${megabytes.toFixed(0)} MB`.padStart(8)}`));

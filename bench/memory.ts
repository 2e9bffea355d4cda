/**
 * What the slots' KV caches cost in memory, Maple against llama-server (built from the source
 * node-llama-cpp ships, on its kernel files), same GGUF and slots: each server is started alone
 * at each context size, answers one short request, and its RSS (anonymous and file-backed, from
 * /proc) and Maple's own KV figure are read. llama-server runs with its default flags (a windowed
 * sliding-window cache, no --swa-full); Maple with its default (windowed too, MAPLE_SWA_FULL
 * unset), and with `--swa-full` also as Maple's full cache.
 *
 *   npm run build && node dist/bench/memory.js [--model synthetic:maple-preview] [--parallel 4]
 *       [--contexts 32768,131072] [--threads 2] [--swa-full]
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { defaultConfig } from "../src/config/settings.js";
import { resolveModel } from "../src/models/resolveModel.js";
import { ensureLlamaCppTools, requireSameKernels, mappedCpuVariant } from "./llamaCpp.js";
import { freePort, repoRoot, waitForHealth } from "./shared.js";

const { values } = parseArgs({
    options: {
        model: { type: "string", default: "synthetic:maple-preview" },
        parallel: { type: "string", default: "4" },
        contexts: { type: "string", default: "32768,131072" },
        threads: { type: "string", default: "2" },
        "swa-full": { type: "boolean", default: false }
    }
});
const parallel = Number(values.parallel);
const model = await resolveModel(values.model, { modelsDir: process.env.MAPLE_MODELS_DIR ?? defaultConfig().modelsDir });
const tools = await ensureLlamaCppTools();

interface Started {
    child: ChildProcess;
    url: string;
    /** The server's own account of its KV cache, in MiB, read from its log. */
    kvMib: () => number | undefined;
}

async function startLlamaServer(contextSize: number): Promise<Started> {
    const port = await freePort();
    const child = spawn(tools.server, ["-m", model.path, "-t", values.threads, "-tb", values.threads, "-c", String(contextSize * parallel), "-np", String(parallel),
        "--port", String(port), "--host", "127.0.0.1", "--no-webui"], { stdio: "ignore" });
    // This llama-server does not log its KV buffer sizes at its default verbosity: its anonymous RSS is the comparison.
    return { child, url: `http://127.0.0.1:${port}`, kvMib: () => undefined };
}

async function startMaple(contextSize: number, swaFull: boolean): Promise<Started> {
    const port = await freePort();
    const child = spawn(process.execPath, [`${repoRoot}bin/maple.cjs`, "serve", "--model", model.path, "--port", String(port), "--threads", values.threads,
        "--parallel", String(parallel), "--context-size", String(contextSize), "--log-level", "info"],
    { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, MAPLE_SWA_FULL: String(swaFull) } });
    let log = "";
    child.stdout!.on("data", (data: Buffer) => (log += data.toString()));
    const kvMib = (): number | undefined => {
        const perSlot = /"kvBytesPerSlot":(\d+)/.exec(log)?.[1];
        return perSlot === undefined ? undefined : (Number(perSlot) * parallel) / 2 ** 20;
    };
    return { child, url: `http://127.0.0.1:${port}`, kvMib };
}

async function memory(pid: number): Promise<{ rss: number; anonymous: number; file: number }> {
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const mb = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024;
    return { rss: mb("VmRSS"), anonymous: mb("RssAnon"), file: mb("RssFile") };
}

async function measure(name: string, contextSize: number, started: Started): Promise<{ name: string; pid: number; variant: string | undefined } | undefined> {
    try {
        try {
            await waitForHealth(started.url, started.child);
        } catch (error) {
            // A server that refuses a size it cannot hold says so (Maple names the figures) and exits.
            console.log(`${name.padEnd(22)} ${parallel} × ${String(contextSize).padStart(6)}: did not start (${(error as Error).message}; its log above says why)`);
            return undefined;
        }
        const response = await fetch(`${started.url}/v1/completions`, {
            method: "POST", headers: { "content-type": "application/json" },
            body: JSON.stringify({ prompt: "Memory check.", max_tokens: 4, temperature: 0 })
        });
        if (!response.ok) throw new Error(`${name}: HTTP ${response.status} ${await response.text()}`);
        const { rss, anonymous, file } = await memory(started.child.pid!);
        const kv = started.kvMib();
        console.log(`${name.padEnd(22)} ${parallel} × ${String(contextSize).padStart(6)}: RSS ${(rss / 1024).toFixed(2)} GB `
            + `(anonymous ${(anonymous / 1024).toFixed(2)} GB, file ${(file / 1024).toFixed(2)} GB), KV ${kv === undefined ? "not logged" : `${(kv / 1024).toFixed(2)} GiB`}`);
        return { name, pid: 0, variant: await mappedCpuVariant(started.child.pid!) };
    } finally {
        started.child.kill("SIGTERM");
        if (started.child.exitCode === null) await once(started.child, "exit");
    }
}

console.log(`model ${values.model} (${model.path}), ${parallel} slots, threads ${values.threads}`);
const kernels: { name: string; pid: number; variant: string | undefined }[] = [];
const measured = (result: { name: string; pid: number; variant: string | undefined } | undefined): void => {
    if (result !== undefined) kernels.push(result);
};
for (const contextSize of values.contexts.split(",").map(Number)) {
    measured(await measure("llama-server", contextSize, await startLlamaServer(contextSize)));
    measured(await measure("maple serve", contextSize, await startMaple(contextSize, false)));
    if (values["swa-full"]) measured(await measure("maple serve (swa full)", contextSize, await startMaple(contextSize, true)));
}
await requireSameKernels(kernels);

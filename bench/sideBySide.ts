/**
 * Decode speed of llama-server and Maple measured at the same moment, each server pinned to a core
 * of its own: what launches.ts cannot give on a VM whose speed drifts by the minute (llama-bench's
 * decode ran at 12.9 and 22.5 tok/s within one hour here). Two requests that run at once see the
 * same machine; which core each server has is swapped between pairs (every thread of both, live,
 * with `taskset -a -p`), so a slower core weighs on both equally.
 *
 *   npm run build && node dist/bench/sideBySide.js [--model synthetic:qwen3-0.6b] [--pairs 8]
 *       [--parallel 4] [--prompt-tokens 200] [--max-tokens 128] [--floor-pairs 2] [--swa-full]
 *       [--warm-up-tokens 2048]
 *
 * Each server gets one core for everything (one llama.cpp thread, its HTTP and, for Maple, the
 * event loop), so whatever runs beside the decode is paid from the decode's own core, as it is
 * when a server shares its cores with nothing idle. Four phases:
 * - one stream: the same prompt and seed to both at once, `--pairs` times;
 * - `--parallel` streams at once to each server at the same time, `--pairs` times;
 * - the floor: llama-bench's decode at the prompt's depth on one core while Maple generates on the
 *   other, Maple's requests timed only while llama-bench runs;
 * - the floor alone: llama-bench, llama-server and Maple in turn on the same core, the other one
 *   idle, `--floor-pairs` rounds that alternate the order (4 cover both cores in both orders).
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { parseArgs, promisify } from "node:util";
import { defaultConfig } from "../src/config/settings.js";
import { resolveModel } from "../src/models/resolveModel.js";
import { ensureLlamaCppTools, llamaBenchRows, requireSameKernels } from "./llamaCpp.js";
import { freePort, median, repoRoot, runPrompt, waitForHealth } from "./shared.js";
import { parallelAggregate, timeCompletionStream } from "./streamClient.js";

const run = promisify(execFile);

const { values } = parseArgs({
    options: {
        model: { type: "string", default: "synthetic:qwen3-0.6b" },
        pairs: { type: "string", default: "8" },
        "floor-pairs": { type: "string", default: "2" },
        parallel: { type: "string", default: "4" },
        "prompt-tokens": { type: "string", default: "200" },
        "max-tokens": { type: "string", default: "128" },
        "context-size": { type: "string", default: "4096" },
        "swa-full": { type: "boolean", default: false },
        "warm-up-tokens": { type: "string", default: "2048" }
    }
});
const pairs = Number(values.pairs);
const floorPairs = Number(values["floor-pairs"]);
// Requests (and llama-bench repetitions) per turn of a round in the alone floor phase.
const aloneRequests = 3;
const parallel = Number(values.parallel);
const promptTokens = Number(values["prompt-tokens"]);
const contextSize = Number(values["context-size"]);
// Both servers keep the same sliding-window cache: the window only (both servers' default), or
// every token (`--swa-full`). Comparing one against the other measures the cache, not the server.
const swaFull = values["swa-full"] === true;
const sampling = { max_tokens: Number(values["max-tokens"]), ignore_eos: true, temperature: 0.6, top_p: 0.95, top_k: 20 };
const warmUpTokens = Number(values["warm-up-tokens"]);
const cores = ["0", "1"] as const;
if (pairs % 2 !== 0 || floorPairs % 2 !== 0) throw new Error("--pairs and --floor-pairs must be even: each swapped pair runs both placements on the cores");

const modelsDir = process.env.MAPLE_MODELS_DIR ?? defaultConfig().modelsDir;
const model = await resolveModel(values.model, { modelsDir });
const tools = await ensureLlamaCppTools();

interface Server {
    name: string;
    child: ChildProcess;
    url: string;
}

async function start(name: string, core: string, command: string, args: (port: number) => string[]): Promise<Server> {
    const port = await freePort();
    // llama-server logs every request to stderr; Maple runs at --log-level warn.
    const child = spawn("taskset", ["-c", core, command, ...args(port)], { stdio: ["ignore", "ignore", name === "maple serve" ? "inherit" : "ignore"] });
    const url = `http://127.0.0.1:${port}`;
    await waitForHealth(url, child);
    return { name, child, url };
}

/** Decode rates of `count` one-stream requests in a row, on prompts numbered from `firstPrompt`. */
async function oneAfterAnother(server: Server, count: number, firstPrompt: number): Promise<number[]> {
    const rates: number[] = [];
    for (let request = 0; request < count; request++) {
        const timing = await timeCompletionStream(server.url, { prompt: runPrompt(firstPrompt + request, promptTokens), ...sampling, seed: request + 1 });
        rates.push(timing.decodeTokensPerSecond);
    }
    return rates;
}

/**
 * Decodes `warmUpTokens` one stream at a time, then a round of `--parallel` streams, before
 * anything is timed. V8 optimizes the per-token functions only after they have run a while: on
 * the maple-preview twin Maple's main thread spent 1.77 ms of CPU a token over its first 256
 * tokens, 1.22 over tokens 512-768 and 0.89 past 1,800, on the decode's own core. A server that
 * has been up for a while runs warm; a C++ server has no such start.
 */
async function warmUp(server: Server): Promise<void> {
    await oneAfterAnother(server, Math.ceil(warmUpTokens / sampling.max_tokens), 300);
    await parallelAggregate(server.url, parallel, sampling);
}

/** Moves every thread of the process to `core` (threads started later inherit it). */
async function pin(server: Server, core: string): Promise<void> {
    await run("taskset", ["-a", "-c", "-p", core, String(server.child.pid)]);
}

function stop(server: Server): Promise<void> {
    return new Promise((resolve) => {
        if (server.child.exitCode !== null) return resolve();
        server.child.once("exit", () => resolve());
        server.child.kill("SIGTERM");
    });
}

const llamaServer = await start("llama-server", cores[0], tools.server, (port) => ["-m", model.path, "-t", "1", "-tb", "1",
    "-c", String(contextSize * parallel), "-np", String(parallel), ...(swaFull ? ["--swa-full"] : []), "--port", String(port), "--host", "127.0.0.1", "--no-webui"]);
const maple = await start("maple serve", cores[1], process.execPath, (port) => [`${repoRoot}bin/maple.cjs`, "serve", "--model", model.path,
    "--port", String(port), "--threads", "1", "--parallel", String(parallel), "--context-size", String(contextSize), "--swa-full", String(swaFull), "--log-level", "warn"]);

/** Pair `index` gives llama-server core 0 on even pairs and core 1 on odd ones; Maple the other. */
async function pinForPair(index: number): Promise<string> {
    const serverCore = cores[index % 2]!;
    const mapleCore = cores[(index + 1) % 2]!;
    await pin(llamaServer, serverCore);
    await pin(maple, mapleCore);
    return `llama-server on cpu ${serverCore}, Maple on cpu ${mapleCore}`;
}

const ratios = (rows: readonly { server: number; maple: number }[]): string => rows.map((row) => (row.maple / row.server).toFixed(3)).join(", ");

/**
 * The ratio over all pairs as a geometric mean, with the ratios of each two successive pairs (the
 * two placements on the cores) combined first: here one vCPU ran up to 2× slower than the other for
 * tens of seconds at a time, so a single pair measures the cores as much as the servers, and a
 * swapped pair undoes that.
 */
function summary(rows: readonly { server: number; maple: number }[]): string {
    const logs = rows.map((row) => Math.log(row.maple / row.server));
    const balanced: number[] = [];
    for (let index = 0; index + 1 < logs.length; index += 2) balanced.push(Math.exp((logs[index]! + logs[index + 1]!) / 2));
    const mean = Math.exp(logs.reduce((sum, value) => sum + value, 0) / logs.length);
    return `geometric mean ${mean.toFixed(3)}, by swapped pair ${balanced.map((value) => value.toFixed(3)).join(", ")} (median ${median(balanced).toFixed(3)})`;
}

try {
    await Promise.all([warmUp(llamaServer), warmUp(maple)]);
    const kernels = await requireSameKernels([{ name: "llama-server", pid: llamaServer.child.pid! }, { name: "maple serve", pid: maple.child.pid! }]);
    console.log(`model ${values.model} (${model.path}), 1 thread and 1 core each, prompt ~${promptTokens} tokens, ${sampling.max_tokens} generated, `
        + `${pairs} pairs, ${parallel} streams at once, both warmed with ${warmUpTokens} tokens, sliding-window layers keep ${swaFull ? "every token (--swa-full)" : "their window"}`);

    const oneStream: { server: number; maple: number }[] = [];
    for (let index = 0; index < pairs; index++) {
        const placement = await pinForPair(index);
        const body = { prompt: runPrompt(index, promptTokens), ...sampling, seed: index + 1 };
        const [server, mine] = await Promise.all([timeCompletionStream(llamaServer.url, body), timeCompletionStream(maple.url, body)]);
        oneStream.push({ server: server.decodeTokensPerSecond, maple: mine.decodeTokensPerSecond });
        console.log(`one stream, pair ${index + 1} (${placement}): llama-server ${server.decodeTokensPerSecond.toFixed(1)}, `
            + `Maple ${mine.decodeTokensPerSecond.toFixed(1)} tok/s (${(mine.decodeTokensPerSecond / server.decodeTokensPerSecond).toFixed(3)}×)`);
    }

    const streams: { server: number; maple: number }[] = [];
    for (let index = 0; index < pairs; index++) {
        const placement = await pinForPair(index);
        const [server, mine] = await Promise.all([parallelAggregate(llamaServer.url, parallel, sampling), parallelAggregate(maple.url, parallel, sampling)]);
        streams.push({ server, maple: mine });
        console.log(`${parallel} streams, pair ${index + 1} (${placement}): llama-server ${server.toFixed(1)}, Maple ${mine.toFixed(1)} tok/s `
            + `(${(mine / server).toFixed(3)}×)`);
    }

    // The floor: llama-bench on one core while Maple decodes on the other, llama-server idle.
    const floor: { server: number; maple: number }[] = [];
    for (let index = 0; index < floorPairs; index++) {
        const benchCore = cores[index % 2]!;
        await pin(maple, cores[(index + 1) % 2]!);
        await pin(llamaServer, benchCore);
        const rates: number[] = [];
        let benchRunning = true;
        const bench = runLlamaBenchOn(benchCore, kernels).finally(() => (benchRunning = false));
        for (let request = 0; benchRunning; request++) {
            const timing = await timeCompletionStream(maple.url, { prompt: runPrompt(100 + request, promptTokens), ...sampling, seed: request + 1 });
            if (benchRunning) rates.push(timing.decodeTokensPerSecond);
        }
        const benchRate = await bench;
        floor.push({ server: benchRate, maple: median(rates) });
        console.log(`floor, pair ${index + 1} (llama-bench on cpu ${benchCore}): llama-bench at depth ${promptTokens} `
            + `${benchRate.toFixed(1)} tok/s, Maple ${median(rates).toFixed(1)} tok/s over ${rates.length} requests `
            + `(${(median(rates) / benchRate).toFixed(3)}×)`);
    }

    // The floor again, each alone on the same core in turn: llama-bench beside a decoding Maple
    // shares the machine's memory bandwidth with it in unlike phases (its untimed depth prefill
    // runs against Maple's timed decode), while here each decodes with the other core idle but for
    // the client. llama-server takes the same turns, which says how far from llama-bench a server
    // of llama.cpp's own gets. The order reverses every other round (llama-server in the middle), so
    // a machine speeding up or slowing down over a round favours no one.
    const timeAlone = async (server: Server): Promise<number> => median(await oneAfterAnother(server, aloneRequests, 200));
    const alone: { bench: number; server: number; maple: number }[] = [];
    for (let index = 0; index < floorPairs; index++) {
        const core = cores[Math.floor(index / 2) % 2]!;
        const otherCore = cores[(Math.floor(index / 2) + 1) % 2]!;
        await pin(maple, core);
        await pin(llamaServer, core);
        const row = { bench: 0, server: 0, maple: 0 };
        const turns = [
            async () => (row.maple = await timeAlone(maple)),
            async () => (row.server = await timeAlone(llamaServer)),
            async () => (row.bench = await runLlamaBenchOn(core, kernels, aloneRequests))
        ];
        const benchFirst = index % 2 === 1;
        for (const turn of benchFirst ? turns.reverse() : turns) await turn();
        alone.push(row);
        console.log(`floor alone, round ${index + 1} (cpu ${core}, ${benchFirst ? "llama-bench first" : "Maple first"}, cpu ${otherCore} idle): llama-bench at depth `
            + `${promptTokens} ${row.bench.toFixed(1)}, llama-server ${row.server.toFixed(1)}, Maple ${row.maple.toFixed(1)} tok/s (medians of ${aloneRequests}) `
            + `(Maple ${(row.maple / row.bench).toFixed(3)}×, llama-server ${(row.server / row.bench).toFixed(3)}× llama-bench)`);
    }

    console.log(`\nMaple / llama-server at the same moment, one stream: ${ratios(oneStream)}; ${summary(oneStream)}`);
    console.log(`Maple / llama-server at the same moment, ${parallel} streams: ${ratios(streams)}; ${summary(streams)}`);
    if (floor.length > 0) console.log(`Maple / llama-bench's decode at depth ${promptTokens}, beside each other: ${ratios(floor)}; ${summary(floor)}`);
    if (alone.length > 0) {
        const mapleRows = alone.map((row) => ({ server: row.bench, maple: row.maple }));
        const serverRows = alone.map((row) => ({ server: row.bench, maple: row.server }));
        console.log(`Maple / llama-bench's decode at depth ${promptTokens}, each alone in turn: ${ratios(mapleRows)}; ${summary(mapleRows)}`);
        console.log(`llama-server / llama-bench's decode at depth ${promptTokens}, each alone in turn: ${ratios(serverRows)}; ${summary(serverRows)}`);
    }
} finally {
    await Promise.all([stop(llamaServer), stop(maple)]);
}

/**
 * llama-bench's decode rate at the prompt's depth, pinned to `core` (by default with enough
 * repetitions to outlast several Maple requests); refuses a run on other kernels than the servers'.
 */
async function runLlamaBenchOn(core: string, kernels: string, repetitions = 5): Promise<number> {
    const { rows, cpuVariant } = await llamaBenchRows(["taskset", "-c", core, tools.bench, "-m", model.path, "-t", "1", "-p", "0",
        "-n", String(sampling.max_tokens), "-d", String(promptTokens), "-r", String(repetitions)]);
    if (cpuVariant !== kernels) throw new Error(`llama-bench ran ${cpuVariant ?? "no CPU kernel file"}, the servers ${kernels}: not comparing`);
    return rows.find((row) => row.n_gen > 0)?.avg_ts ?? NaN;
}

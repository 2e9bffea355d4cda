/**
 * The prompt cache beyond the slots, against llama-server (built from the source node-llama-cpp
 * ships, same GGUF, same slots) and against Maple without its cache. Servers run one at a time,
 * in interleaved turns (the machine is shared): each turn starts a fresh server, runs the
 * workload, and stops it.
 *
 *   node dist/bench/promptCache.js [--model qwen3-0.6b] [--workload conversations|mixed|agents|restart]
 *       [--conversations 12] [--rounds 3] [--system-tokens 600] [--parallel 4] [--threads 2]
 *       [--context-size 4096] [--turns 1] [--cache-ram MIB] [--contenders llama-server,maple,maple-nocache]
 *       [--agent-kinds 3] [--sessions 4] [--swa-full]
 *
 * conversations: each conversation has its own ~600-token system prompt and grows by one short
 *   user turn per round; every round sends all conversations at once; 1 token generated, so the
 *   time is the prompt's. Reports rounds 2.. total, median request, share of prompt tokens cached.
 * agents: `--agent-kinds` agent kinds, each its own ~`--system-tokens` system prompt and three
 *   tools (its preamble); `--sessions` new sessions of each kind, interleaved across kinds, arrive
 *   `--parallel` at a time (each session: a first message, then one follow-up turn). No session
 *   repeats another's first message, so a session's preamble is all it can reuse from others.
 *   Reports the total time, the share of each new session's first prompt read from the cache,
 *   and of all prompts.
 * mixed: one request, then four at once (five distinct prompts over four slots), then each of
 *   the five again plus a turn; reports the second batch's wall time.
 * blocking (Maple only, 2 slots): one stream decodes while the other slot runs A, B (A saved),
 *   A's next turn (B saved, A restored), then a cold conversation; reports the stream's median
 *   step and its longest gap while each request ran (a save or restore, against a cold prefill).
 * restart (Maple only): conversations' first round, a graceful stop, a restart on the same disk
 *   tier, then a known conversation's next turn against a cold one of the same length.
 * Both servers run their default cache on a sliding-window model (llama-server without
 * --swa-full: its windowed cache with context checkpoints; Maple's windowed cache), as a user
 * would run them; `--swa-full` runs both with the full cache instead (MAPLE_SWA_FULL=true).
 * Maple's RSS at the end of a run, its tmpfs bytes, and its restore cost per 1k tokens (from
 * /metrics) are printed too.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { defaultConfig } from "../src/config/settings.js";
import { resolveModel } from "../src/models/resolveModel.js";
import { ensureLlamaCppTools, mappedCpuVariant, requireSameKernels } from "./llamaCpp.js";
import { benchPrompt, freePort, median, repoRoot, rssMb, waitForHealth } from "./shared.js";

const { values } = parseArgs({
    options: {
        model: { type: "string", default: "qwen3-0.6b" },
        workload: { type: "string", default: "conversations" },
        conversations: { type: "string", default: "12" },
        rounds: { type: "string", default: "3" },
        "system-tokens": { type: "string", default: "600" },
        parallel: { type: "string", default: "4" },
        threads: { type: "string", default: "2" },
        "context-size": { type: "string", default: "4096" },
        turns: { type: "string", default: "1" },
        "cache-ram": { type: "string" },
        contenders: { type: "string", default: "llama-server,maple" },
        "agent-kinds": { type: "string", default: "3" },
        sessions: { type: "string", default: "4" },
        "swa-full": { type: "boolean", default: false }
    }
});
const conversations = Number(values.conversations);
const rounds = Number(values.rounds);
const systemTokens = Number(values["system-tokens"]);
const parallel = Number(values.parallel);
const threads = Number(values.threads);
const contextSize = Number(values["context-size"]);
const turns = Number(values.turns);
const model = await resolveModel(values.model.includes("/") ? values.model : `synthetic:${values.model}`, { modelsDir: process.env.MAPLE_MODELS_DIR ?? defaultConfig().modelsDir });

interface Server {
    name: string;
    url: string;
    child: ChildProcess;
}

type Contender = "llama-server" | "maple" | "maple-nocache";

async function start(contender: Contender, extraEnv: Record<string, string> = {}, slots = parallel): Promise<Server> {
    const port = await freePort();
    let child: ChildProcess;
    if (contender === "llama-server") {
        const tools = await ensureLlamaCppTools();
        child = spawn(tools.server, ["-m", model.path, "-t", String(threads), "-tb", String(threads), "-c", String(contextSize * parallel),
            "-np", String(parallel), ...(values["swa-full"] ? ["--swa-full"] : []), "--port", String(port), "--host", "127.0.0.1", "--no-webui",
            // The same bound on both sides when one is given (llama-server's default is 8192 MiB).
            ...(values["cache-ram"] === undefined ? [] : ["--cache-ram", values["cache-ram"]])], { stdio: "ignore" });
    } else {
        const cacheRam = contender === "maple-nocache" ? "0" : values["cache-ram"];
        child = spawn(process.execPath, [`${repoRoot}bin/maple.cjs`, "serve", "--model", model.path, "--port", String(port), "--threads", String(threads),
            "--parallel", String(slots), "--context-size", String(contextSize), "--log-level", "warn"],
        { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, MAPLE_QUEUE_TIMEOUT: "3600", ...(values["swa-full"] ? { MAPLE_SWA_FULL: "true" } : {}), ...(cacheRam === undefined ? {} : { MAPLE_CACHE_RAM: cacheRam }), ...extraEnv } });
    }
    const url = `http://127.0.0.1:${port}`;
    await waitForHealth(url, child);
    return { name: contender, url, child };
}

async function stop(server: Server): Promise<void> {
    if (server.child.exitCode !== null) return;
    server.child.kill("SIGTERM");
    await once(server.child, "exit");
}

interface Message {
    role: "system" | "user" | "assistant";
    content: string;
}

interface RequestResult {
    seconds: number;
    promptTokens: number;
    cachedTokens: number;
    reply: string;
}

async function chat(server: Server, messages: readonly Message[], tools?: readonly unknown[]): Promise<RequestResult> {
    const startedAt = performance.now();
    const response = await fetch(`${server.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "bench", messages, max_tokens: 1, temperature: 0, ...(tools === undefined ? {} : { tools }) })
    });
    const body = await response.json() as {
        choices?: { message: { content: string | null } }[];
        usage?: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens?: number } };
    };
    if (response.status !== 200) throw new Error(`${server.name}: ${response.status} ${JSON.stringify(body)}`);
    return {
        seconds: (performance.now() - startedAt) / 1000,
        promptTokens: body.usage?.prompt_tokens ?? 0,
        cachedTokens: body.usage?.prompt_tokens_details?.cached_tokens ?? 0,
        reply: body.choices?.[0]?.message.content ?? ""
    };
}

const systemPrompt = (index: number): string => `You are assistant number ${index} of the ${["red", "green", "blue", "amber"][index % 4]} team. ${benchPrompt(systemTokens)}`;
const userTurn = (conversation: number, round: number): string => `Question ${round} of conversation ${conversation}: what comes after ${conversation * 31 + round}?`;

interface CacheFigures {
    rssMb: number;
    tmpfsMb: number;
    restores: number;
    /** llama.cpp's own time; the waits for the context apart. */
    restoreSeconds: number;
    restoreWaitSeconds: number;
    restoredTokens: number;
    saves: number;
    /** Of the saves and restores, shared preambles'. */
    preambleSaves: number;
    preambleRestores: number;
    evictions: number;
    /** What the save rule weighed at the end (see worthSaving). */
    saveToPrefillRatio: number;
    returnShare: number;
}

async function mapleCacheFigures(server: Server): Promise<CacheFigures | undefined> {
    if (server.name === "llama-server") return undefined;
    const text = await (await fetch(`${server.url}/metrics`)).text();
    // Summed over the `model` label (one model here): `series` names the family and its other labels.
    const sample = (series: string): number => {
        const [name, labels = ""] = series.replace(/}$/, "").split("{");
        const lines = text.split("\n").filter((line) => line.startsWith(`${name}{`) && line.includes(labels));
        return lines.length === 0 ? NaN : lines.reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
    };
    return {
        rssMb: await rssMb(server.child.pid!),
        tmpfsMb: sample("maple:prompt_cache_bytes{tier=\"ram\"}") / (1 << 20),
        restores: sample("maple:prompt_cache_restores_total{tier=\"ram\"}") + sample("maple:prompt_cache_restores_total{tier=\"disk\"}"),
        restoreSeconds: sample("maple:prompt_cache_restore_seconds_sum"),
        restoreWaitSeconds: sample("maple:prompt_cache_restore_wait_seconds_sum"),
        restoredTokens: sample("maple:prompt_cache_restored_tokens_total"),
        saves: sample("maple:prompt_cache_saves_total{tier=\"ram\"}"),
        preambleSaves: sample("maple:prompt_cache_preamble_saves_total{tier=\"ram\"}"),
        preambleRestores: sample("maple:prompt_cache_preamble_restores_total{tier=\"ram\"}") + sample("maple:prompt_cache_preamble_restores_total{tier=\"disk\"}"),
        evictions: sample("maple:prompt_cache_evictions_total{tier=\"ram\"}"),
        saveToPrefillRatio: sample("maple:prompt_cache_save_to_prefill_ratio"),
        returnShare: sample("maple:prompt_cache_return_share")
    };
}

function describeCache(figures: CacheFigures | undefined): string {
    if (figures === undefined) return "";
    const perThousand = figures.restoredTokens > 0 ? (figures.restoreSeconds * 1000) / (figures.restoredTokens / 1000) : NaN;
    const waitPerRestore = figures.restores > 0 ? (figures.restoreWaitSeconds * 1000) / figures.restores : NaN;
    return ` | RSS ${figures.rssMb.toFixed(0)} MB, tmpfs ${figures.tmpfsMb.toFixed(0)} MB, ${figures.saves} saves (${figures.preambleSaves} preambles), `
        + `${figures.restores} restores (${figures.preambleRestores} preambles), `
        + `${figures.evictions} evictions, restore ${perThousand.toFixed(1)} ms per 1k tokens (waits ${waitPerRestore.toFixed(0)} ms a restore), `
        + `save-to-prefill ratio ${figures.saveToPrefillRatio.toFixed(4)}, return share ${figures.returnShare.toFixed(2)}`;
}

async function conversationsWorkload(server: Server): Promise<string> {
    const histories: Message[][] = Array.from({ length: conversations }, (_, index) => [{ role: "system", content: systemPrompt(index) }]);
    const later: RequestResult[] = [];
    let laterSeconds = 0;
    for (let round = 1; round <= rounds; round += 1) {
        const startedAt = performance.now();
        const results = await Promise.all(histories.map(async (history, index) => {
            history.push({ role: "user", content: userTurn(index, round) });
            const result = await chat(server, history);
            history.push({ role: "assistant", content: result.reply });
            return result;
        }));
        if (round > 1) {
            laterSeconds += (performance.now() - startedAt) / 1000;
            later.push(...results);
        }
    }
    const prompt = later.reduce((sum, result) => sum + result.promptTokens, 0);
    const cached = later.reduce((sum, result) => sum + result.cachedTokens, 0);
    return `rounds 2-${rounds} ${laterSeconds.toFixed(1)} s, median request ${median(later.map((result) => result.seconds)).toFixed(2)} s, `
        + `cached ${((100 * cached) / Math.max(1, prompt)).toFixed(0)}% (${prompt - cached} of ${prompt} prompt tokens evaluated)${describeCache(await mapleCacheFigures(server))}`;
}

async function mixedWorkload(server: Server): Promise<string> {
    const history = (index: number): Message[] => [{ role: "system", content: systemPrompt(index) }, { role: "user", content: userTurn(index, 1) }];
    await chat(server, history(0));
    let startedAt = performance.now();
    await Promise.all([1, 2, 3, 4].map((index) => chat(server, history(index))));
    const batch = (performance.now() - startedAt) / 1000;
    startedAt = performance.now();
    const again = await Promise.all([0, 1, 2, 3, 4].map((index) => chat(server, [...history(index), { role: "assistant", content: "ok" }, { role: "user", content: userTurn(index, 2) }])));
    const second = (performance.now() - startedAt) / 1000;
    const cached = again.reduce((sum, result) => sum + result.cachedTokens, 0) / again.reduce((sum, result) => sum + result.promptTokens, 0);
    return `four at once ${batch.toFixed(2)} s; all five again ${second.toFixed(2)} s, cached ${(100 * cached).toFixed(0)}%${describeCache(await mapleCacheFigures(server))}`;
}

/** An agent kind's tools: part of its preamble, as Claude Code's and Codex's are. */
const agentTools = (kind: number): unknown[] => ["read_file", "run_command", "search"].map((name, index) => ({
    type: "function",
    function: {
        name: `${name}_${kind}`, description: `Tool ${index} of agent kind ${kind}. ${benchPrompt(40)}`,
        parameters: { type: "object", properties: { argument: { type: "string", description: `The argument of ${name}.` } }, required: ["argument"] }
    }
}));

async function agentsWorkload(server: Server): Promise<string> {
    const kinds = Number(values["agent-kinds"]);
    const sessions = Number(values.sessions);
    // Interleaved: session 0 of each kind, then session 1 of each, …
    const queue = Array.from({ length: kinds * sessions }, (_, index) => ({ kind: index % kinds, session: Math.floor(index / kinds) }));
    const firsts: { result: RequestResult; session: number }[] = [];
    const all: RequestResult[] = [];
    const startedAt = performance.now();
    for (let start = 0; start < queue.length; start += parallel) {
        await Promise.all(queue.slice(start, start + parallel).map(async ({ kind, session }) => {
            const history: Message[] = [
                { role: "system", content: `You are agent kind ${kind}, the ${["planner", "coder", "reviewer", "tester"][kind % 4]}. ${systemPrompt(kind)}` },
                { role: "user", content: `Session ${session} of kind ${kind}: task ${kind * 97 + session * 13}.` }
            ];
            const first = await chat(server, history, agentTools(kind));
            history.push({ role: "assistant", content: first.reply }, { role: "user", content: `Continue task ${kind * 97 + session * 13}.` });
            const next = await chat(server, history, agentTools(kind));
            firsts.push({ result: first, session });
            all.push(first, next);
        }));
    }
    const seconds = (performance.now() - startedAt) / 1000;
    const share = (results: RequestResult[]): string => (100 * results.reduce((sum, result) => sum + result.cachedTokens, 0)
        / Math.max(1, results.reduce((sum, result) => sum + result.promptTokens, 0))).toFixed(0);
    // The first session of each kind has nothing to reuse: the sessions after it are the ones a shared preamble serves.
    const later = firsts.filter((first) => first.session > 0).map((first) => first.result);
    const firstSessions = firsts.filter((first) => first.session === 0).map((first) => first.result.seconds);
    // One generated token: a first request's time is its time to first token.
    return `${kinds} kinds × ${sessions} sessions ${seconds.toFixed(1)} s, new sessions' first prompts cached ${share(later)}% (all prompts ${share(all)}%), `
        + `first request of a new session median ${median(later.map((result) => result.seconds)).toFixed(2)} s (of each kind's first session ${median(firstSessions).toFixed(2)} s), `
        + `median first prompt ${median(firsts.map((first) => first.result.promptTokens)).toFixed(0)} tokens${describeCache(await mapleCacheFigures(server))}`;
}

/** Gaps between a streaming generation's chunks, timestamped. */
async function streamGaps(server: Server, prompt: string, maxTokens: number, onStarted: () => void, signal: AbortSignal): Promise<{ at: number; gap: number }[]> {
    const response = await fetch(`${server.url}/v1/completions`, {
        method: "POST", headers: { "content-type": "application/json" }, signal,
        body: JSON.stringify({ prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream: true })
    });
    const gaps: { at: number; gap: number }[] = [];
    let last: number | undefined;
    const reader = response.body!.getReader();
    for (;;) {
        const { done } = await reader.read().catch(() => ({ done: true }));
        if (done) break;
        const now = performance.now();
        if (last === undefined) onStarted();
        else gaps.push({ at: now, gap: now - last });
        last = now;
    }
    return gaps;
}

async function blockingWorkload(): Promise<string> {
    const server = await start("maple", {}, 2);
    try {
        const a: Message[] = [{ role: "system", content: systemPrompt(0) }, { role: "user", content: userTurn(0, 1) }];
        const phases: { name: string; from: number; to: number }[] = [];
        const timed = async (name: string, messages: Message[]): Promise<RequestResult> => {
            const from = performance.now();
            const result = await chat(server, messages);
            phases.push({ name, from, to: performance.now() });
            return result;
        };
        let started!: () => void;
        const streaming = new Promise<void>((resolve) => (started = resolve));
        const stopStream = new AbortController();
        const gapsPromise = streamGaps(server, benchPrompt(40), 3000, started, stopStream.signal);
        await streaming;
        a.push({ role: "assistant", content: (await timed("A (cold prefill)", a)).reply });
        await timed("B (cold prefill, saves A)", [{ role: "system", content: systemPrompt(1) }, { role: "user", content: userTurn(1, 1) }]);
        a.push({ role: "user", content: userTurn(0, 2) });
        const restored = await timed("A's next turn (saves B, restores A)", a);
        stopStream.abort();
        const gaps = await gapsPromise;
        const step = median(gaps.map((gap) => gap.gap));
        const during = (phase: { from: number; to: number }): number => Math.max(0, ...gaps.filter((gap) => gap.at >= phase.from && gap.at <= phase.to + step).map((gap) => gap.gap));
        return `stream median step ${step.toFixed(0)} ms; longest gap while ` + phases.map((phase) => `${phase.name}: ${during(phase).toFixed(0)} ms (request ${(phase.to - phase.from).toFixed(0)} ms)`).join("; ")
            + `; restored request cached ${restored.cachedTokens}/${restored.promptTokens}` + describeCache(await mapleCacheFigures(server));
    } finally {
        await stop(server);
    }
}

async function restartWorkload(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), "maple-bench-disk-"));
    try {
        const env = { MAPLE_CACHE_DIR: dir };
        const known: Message[] = [{ role: "system", content: systemPrompt(0) }, { role: "user", content: userTurn(0, 1) }];
        const first = await start("maple", env);
        try {
            known.push({ role: "assistant", content: (await chat(first, known)).reply });
        } finally {
            await stop(first);
        }
        const second = await start("maple", env);
        try {
            known.push({ role: "user", content: userTurn(0, 2) });
            const warm = await chat(second, known);
            const cold = await chat(second, [{ role: "system", content: systemPrompt(1) }, { role: "user", content: userTurn(1, 1) },
                { role: "assistant", content: "ok" }, { role: "user", content: userTurn(1, 2) }]);
            return `after a restart: known conversation ${warm.seconds.toFixed(2)} s (cached ${warm.cachedTokens}/${warm.promptTokens}), `
                + `cold ${cold.seconds.toFixed(2)} s (cached ${cold.cachedTokens}/${cold.promptTokens}): ${(cold.seconds / warm.seconds).toFixed(1)}× faster`
                + describeCache(await mapleCacheFigures(second));
        } finally {
            await stop(second);
        }
    } finally {
        await rm(dir, { recursive: true, force: true });
    }
}

console.log(`model ${values.model}, ${threads} threads, ${parallel} slots, context ${contextSize} per slot, workload ${values.workload}`
    + (values.workload === "conversations" ? ` (${conversations} conversations × ${rounds} rounds, ~${systemTokens}-token system prompts)` : "")
    + `; load average ${(await readFile("/proc/loadavg", "utf8")).split(" ")[0]} (shared machine)`);
if (values.workload === "restart" || values.workload === "blocking") {
    for (let turn = 1; turn <= turns; turn += 1) console.log(`turn ${turn}: ${await (values.workload === "restart" ? restartWorkload() : blockingWorkload())}`);
} else {
    const contenders = values.contenders.split(",") as Contender[];
    // The servers run one after another: each one's CPU variant is read while it is up, and the turn's
    // figures are refused when they ran different kernels.
    for (let turn = 1; turn <= turns; turn += 1) {
        const kernels: { name: string; pid: number; variant: string | undefined }[] = [];
        for (const contender of contenders) {
            const server = await start(contender);
            try {
                const figures = values.workload === "mixed" ? await mixedWorkload(server)
                    : values.workload === "agents" ? await agentsWorkload(server) : await conversationsWorkload(server);
                kernels.push({ name: contender, pid: server.child.pid!, variant: await mappedCpuVariant(server.child.pid!) });
                console.log(`turn ${turn} ${contender}: ${figures}`);
            } finally {
                await stop(server);
            }
        }
        await requireSameKernels(kernels);
    }
}

/**
 * Issue 5's load test: Maple under a burst, clients that leave mid-stream or while queued, and
 * slow clients (slowloris headers, a body trickled a byte a second). Loopback only, bounded in
 * requests and time (every request must settle within --deadline seconds, the whole run within
 * 5 minutes); it stops by itself and exits non-zero when a check fails.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/load.js [--burst 64] [--max-tokens 8] [--deadline 60] [--rounds 3] [--rss-bound 64]
 *
 * It starts `maple serve --model synthetic:maple-tiny --threads 2 --max-queue-depth 8 --parallel 4`
 * as a child process (MAPLE_MODELS_DIR as the tests use: the variable, else .maple-cache/models in
 * the clone), and talks to it over raw sockets with `Connection: close`, so it sees every byte the
 * server sends: a response followed by anything (a second answer) is a failure.
 *
 * Prints completed / rejected (503 engine_overloaded with Retry-After) / cancelled (the client
 * left) / failed / hung counts, p50/p99 latency, /health's queue figures (sampled during the burst,
 * and back to 0 at the end) and the server's RSS after warm-up, after each of --rounds more rounds
 * (a burst and the clients that leave, again) and at the end, each read after a full garbage
 * collection in the server (bound: grows by less than --rss-bound MB over the run, default 64).
 * The server runs with `--expose-gc` and a SIGUSR2 handler for that, nothing else changed.
 */
import { spawn } from "node:child_process";
import { connect, type Socket } from "node:net";
import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { freePort, percentile, repoRoot, rssMb, waitForHealth } from "./shared.js";

const { values } = parseArgs({
    options: {
        burst: { type: "string", default: "64" },
        "max-tokens": { type: "string", default: "8" },
        deadline: { type: "string", default: "60" },
        "rss-bound": { type: "string", default: "64" },
        rounds: { type: "string", default: "3" }
    }
});
const burstSize = Number(values.burst);
const maxTokens = Number(values["max-tokens"]);
const deadlineMs = Number(values.deadline) * 1000;
const rssBoundMb = Number(values["rss-bound"]);
const rounds = Number(values.rounds);
const parallel = 4;
const maxQueueDepth = 8;
/** The server's header timeout (src/http/app.ts) plus its checking interval and slack. */
const slowlorisCutWithinMs = 20_000 + 2_000 + 8_000;
const runLimitMs = 5 * 60_000;

type Kind = "completed" | "rejected" | "cancelled" | "failed" | "hung";

interface Outcome {
    kind: Kind;
    label: string;
    status: number | undefined;
    latencyMs: number;
    detail: string;
}

/** One HTTP/1.1 response read off a socket: head, de-chunked body, and whatever came after it. */
class ResponseReader {
    status: number | undefined;
    headers = new Map<string, string>();
    body = Buffer.alloc(0);
    complete = false;
    /** Bytes after the end of the response: a second answer, or garbage. */
    extra = 0;
    private pending = Buffer.alloc(0);
    private headDone = false;
    private remaining: number | undefined;
    private chunked = false;

    push(data: Buffer): void {
        if (this.complete) {
            this.extra += data.length;
            return;
        }
        this.pending = Buffer.concat([this.pending, data]);
        if (!this.headDone) {
            const end = this.pending.indexOf("\r\n\r\n");
            if (end < 0) return;
            const lines = this.pending.subarray(0, end).toString("latin1").split("\r\n");
            this.status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? "")?.[1]);
            for (const line of lines.slice(1)) {
                const colon = line.indexOf(":");
                if (colon > 0) this.headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
            }
            this.headDone = true;
            this.pending = this.pending.subarray(end + 4);
            this.chunked = /chunked/i.test(this.headers.get("transfer-encoding") ?? "");
            const length = this.headers.get("content-length");
            if (!this.chunked && length !== undefined) this.remaining = Number(length);
        }
        this.readBody();
    }

    /** The socket ended: a body without framing ends here. */
    end(): void {
        if (this.headDone && !this.chunked && this.remaining === undefined) {
            this.body = Buffer.concat([this.body, this.pending]);
            this.pending = Buffer.alloc(0);
            this.complete = true;
        }
    }

    get text(): string {
        return this.body.toString("utf8");
    }

    private readBody(): void {
        if (this.remaining !== undefined) {
            const take = Math.min(this.remaining, this.pending.length);
            this.body = Buffer.concat([this.body, this.pending.subarray(0, take)]);
            this.remaining -= take;
            this.pending = this.pending.subarray(take);
            if (this.remaining === 0) this.finish();
            return;
        }
        while (this.chunked) {
            const lineEnd = this.pending.indexOf("\r\n");
            if (lineEnd < 0) return;
            const size = Number.parseInt(this.pending.subarray(0, lineEnd).toString("latin1"), 16);
            if (size === 0) {
                const trailerEnd = this.pending.indexOf("\r\n\r\n", lineEnd);
                const ends = lineEnd + 2 <= this.pending.length && this.pending.subarray(lineEnd, lineEnd + 4).toString() === "\r\n\r\n";
                if (!ends && trailerEnd < 0) return;
                this.pending = this.pending.subarray(ends ? lineEnd + 4 : trailerEnd + 4);
                this.finish();
                return;
            }
            if (this.pending.length < lineEnd + 2 + size + 2) return;
            this.body = Buffer.concat([this.body, this.pending.subarray(lineEnd + 2, lineEnd + 2 + size)]);
            this.pending = this.pending.subarray(lineEnd + 2 + size + 2);
        }
    }

    private finish(): void {
        this.complete = true;
        this.extra += this.pending.length;
        this.pending = Buffer.alloc(0);
    }
}

interface Exchange {
    label: string;
    path: string;
    body: object;
    /** Leave after the first SSE event (mid-stream), or after this many ms (while queued or generating). */
    leave?: { afterFirstEvent: true } | { afterMs: number };
}

let port = 0;

function requestText(path: string, body: string): string {
    return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`
        + `Connection: close\r\n\r\n${body}`;
}

/** Checks a finished response: one well-formed answer, nothing after it. */
function judge(reader: ResponseReader, stream: boolean): { kind: Kind; detail: string } {
    if (reader.extra > 0) return { kind: "failed", detail: `answered twice: ${reader.extra} bytes after the response` };
    if (!reader.complete) return { kind: "failed", detail: "the response ended before its body" };
    if (reader.status === 503) {
        let code: string | undefined;
        try {
            code = (JSON.parse(reader.text) as { error?: { code?: string } }).error?.code;
        } catch {
            return { kind: "failed", detail: "503 without a JSON error" };
        }
        if (code !== "engine_overloaded") return { kind: "failed", detail: `503 ${code}` };
        if (reader.headers.get("retry-after") === undefined) return { kind: "failed", detail: "503 without Retry-After" };
        return { kind: "rejected", detail: "" };
    }
    if (reader.status !== 200) return { kind: "failed", detail: `HTTP ${reader.status}: ${reader.text.slice(0, 200)}` };
    if (!stream) {
        try {
            const body = JSON.parse(reader.text) as { choices?: unknown[] };
            return Array.isArray(body.choices) ? { kind: "completed", detail: "" } : { kind: "failed", detail: "200 without choices" };
        } catch {
            return { kind: "failed", detail: "200 whose body is not one JSON document" };
        }
    }
    const events = reader.text.split("\n\n").filter((event) => event.startsWith("data: ")).map((event) => event.slice(6));
    const done = events.filter((event) => event === "[DONE]").length;
    if (done !== 1 || events.at(-1) !== "[DONE]") return { kind: "failed", detail: `${done} [DONE] events, last ${events.at(-1)}` };
    if (events.slice(0, -1).some((event) => "error" in (JSON.parse(event) as object))) return { kind: "failed", detail: "an in-band error event" };
    return { kind: "completed", detail: "" };
}

/** One request over its own socket; settles as completed, rejected, cancelled, failed or hung (after the deadline). */
function exchange(spec: Exchange): Promise<Outcome> {
    const stream = (spec.body as { stream?: boolean }).stream === true;
    const startedAt = performance.now();
    return new Promise((resolve) => {
        const reader = new ResponseReader();
        const socket = connect(port, "127.0.0.1");
        let settled = false;
        let left = false;
        // Latency runs to the end of the response; the verdict waits for the server to close the
        // connection (Connection: close), so anything it sends after the response is seen.
        let completedAt: number | undefined;
        const settle = (kind: Kind, detail: string): void => {
            if (settled) return;
            settled = true;
            clearTimeout(deadline);
            clearTimeout(leaveTimer);
            socket.destroy();
            resolve({ kind, label: spec.label, status: reader.status, latencyMs: (completedAt ?? performance.now()) - startedAt, detail });
        };
        const leave = (): void => {
            left = true;
            settle("cancelled", "");
        };
        const deadline = setTimeout(() => settle("hung", `no complete answer within ${deadlineMs / 1000} s`), deadlineMs);
        const leaveTimer = spec.leave !== undefined && "afterMs" in spec.leave ? setTimeout(leave, spec.leave.afterMs) : undefined;
        socket.on("data", (data: Buffer) => {
            reader.push(data);
            if (reader.complete) completedAt ??= performance.now();
            if (spec.leave !== undefined && "afterFirstEvent" in spec.leave && reader.status === 200 && reader.text.includes("data: ")) leave();
        });
        socket.on("error", (error) => {
            if (!left) settle("failed", `socket error ${(error as NodeJS.ErrnoException).code ?? error.message}`);
        });
        socket.on("close", () => {
            if (left || settled) return;
            reader.end();
            // The server ends the connection after its one answer (Connection: close); wait a moment for stray bytes.
            setTimeout(() => {
                const verdict = judge(reader, stream);
                settle(verdict.kind, verdict.detail);
            }, 0);
        });
        socket.write(requestText(spec.path, JSON.stringify(spec.body)));
    });
}

/** Sends `data` a byte at a time, one a second, until the server closes the socket (or `stopAfterMs`). */
function trickle(data: string, stopAfterMs: number): Promise<{ closedAfterMs: number | undefined; reply: ResponseReader; sentBytes: number }> {
    const startedAt = performance.now();
    return new Promise((resolve) => {
        const reader = new ResponseReader();
        const socket: Socket = connect(port, "127.0.0.1");
        let sent = 0;
        let finished = false;
        const finish = (closed: boolean): void => {
            if (finished) return;
            finished = true;
            clearInterval(timer);
            clearTimeout(stop);
            socket.destroy();
            reader.end();
            resolve({ closedAfterMs: closed ? performance.now() - startedAt : undefined, reply: reader, sentBytes: sent });
        };
        const timer = setInterval(() => {
            if (sent >= data.length) return;
            socket.write(data[sent]!);
            sent += 1;
        }, 1000);
        const stop = setTimeout(() => finish(false), stopAfterMs);
        socket.on("data", (chunk: Buffer) => reader.push(chunk));
        socket.on("error", () => finish(true));
        socket.on("close", () => finish(true));
    });
}

interface Health {
    status: string;
    queue_depth: number;
    active: number;
}

async function health(): Promise<Health> {
    return await (await fetch(`http://127.0.0.1:${port}/health`)).json() as Health;
}

async function waitForIdle(timeoutMs: number): Promise<{ health: Health; afterMs: number } | undefined> {
    const startedAt = performance.now();
    while (performance.now() - startedAt < timeoutMs) {
        const now = await health();
        if (now.active === 0 && now.queue_depth === 0) return { health: now, afterMs: performance.now() - startedAt };
        await sleep(100);
    }
    return undefined;
}

/**
 * The server's RSS before and after a full garbage collection. node-llama-cpp 3.22.1 gives every
 * generation a sampler holding a vocabulary-sized candidate buffer (151,936 × 12 bytes ≈ 1.8 MB
 * here) that its dispose() leaves allocated: only V8's collection of the sampler frees it, and V8
 * does not know about it. Without a collection first, RSS measures when V8 last collected, not
 * what the server keeps.
 */
async function rssAfterGc(): Promise<{ before: number; after: number }> {
    const before = await rssMb(server.pid!);
    server.kill("SIGUSR2");
    await sleep(500);
    return { before, after: await rssMb(server.pid!) };
}

function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The burst's mix: chat and completions, streamed and not, small max_tokens. */
function burstExchange(index: number, phase: string): Exchange {
    const stream = index % 2 === 1;
    const chat = index % 4 < 2;
    return chat
        ? { label: `${phase} chat${stream ? " stream" : ""}`, path: "/v1/chat/completions",
                body: { messages: [{ role: "user", content: `Client ${index}: say something.` }], max_tokens: maxTokens, stream } }
        : { label: `${phase} completion${stream ? " stream" : ""}`, path: "/v1/completions",
                body: { prompt: `Client ${index}: once upon a time`, max_tokens: maxTokens, stream } };
}

/** A burst of simultaneous clients, with /health sampled while it runs. */
async function burst(phase: string): Promise<{ outcomes: Outcome[]; peakQueue: number; peakActive: number }> {
    let running = true;
    let peakQueue = 0;
    let peakActive = 0;
    const sampler = (async () => {
        while (running) {
            const now = await health();
            peakQueue = Math.max(peakQueue, now.queue_depth);
            peakActive = Math.max(peakActive, now.active);
            await sleep(20);
        }
    })();
    const outcomes = await Promise.all(Array.from({ length: burstSize }, (_, index) => exchange(burstExchange(index, phase))));
    running = false;
    await sampler;
    return { outcomes, peakQueue, peakActive };
}

/** Long generations (the engine never stops them early) for clients that will leave. */
const longCompletion = (label: string, stream: boolean): object => ({ prompt: `${label}: tell a long story`, max_tokens: 1500, ignore_eos: true, stream });

/**
 * Clients that leave: mid-stream after the first event, while generating without streaming, and
 * while queued behind four held streams. The slots and queue places must all come back.
 */
async function departures(): Promise<{ outcomes: Outcome[]; queuedSeen: number; idleAfterMs: number | undefined }> {
    const midStream = await Promise.all(Array.from({ length: 8 }, (_, index) => exchange({
        label: "leaves mid-stream", path: index % 2 === 0 ? "/v1/completions" : "/v1/chat/completions",
        body: index % 2 === 0
            ? longCompletion(`mid ${index}`, true)
            : { messages: [{ role: "user", content: `Story ${index}` }], max_tokens: 1500, ignore_eos: true, stream: true },
        leave: { afterFirstEvent: true }
    })));
    const generating = await Promise.all(Array.from({ length: 4 }, (_, index) => exchange({
        label: "leaves while generating (not streamed)", path: "/v1/completions", body: longCompletion(`gen ${index}`, false), leave: { afterMs: 1500 }
    })));
    // Four streams hold every slot; four more requests queue behind them and then leave.
    const holders = Array.from({ length: parallel }, (_, index) => exchange({
        label: "holds a slot, then leaves", path: "/v1/completions", body: longCompletion(`hold ${index}`, true), leave: { afterMs: 8000 }
    }));
    await sleep(1000);
    const queued = Array.from({ length: 4 }, (_, index) => exchange({
        label: "leaves while queued", path: "/v1/completions", body: longCompletion(`queued ${index}`, false), leave: { afterMs: 2500 }
    }));
    await sleep(1500);
    const queuedSeen = (await health()).queue_depth;
    const queuedOutcomes = await Promise.all(queued);
    const holderOutcomes = await Promise.all(holders);
    const idle = await waitForIdle(15_000);
    return { outcomes: [...midStream, ...generating, ...queuedOutcomes, ...holderOutcomes], queuedSeen, idleAfterMs: idle?.afterMs };
}

function summarize(name: string, outcomes: readonly Outcome[]): void {
    const count = (kind: Kind): number => outcomes.filter((outcome) => outcome.kind === kind).length;
    const latencies = (kind: Kind): number[] => outcomes.filter((outcome) => outcome.kind === kind).map((outcome) => outcome.latencyMs);
    const completed = latencies("completed");
    const rejected = latencies("rejected");
    const ms = (value: number): string => (Number.isNaN(value) ? "-" : `${value.toFixed(0)} ms`);
    console.log(`${name.padEnd(22)} ${String(outcomes.length).padStart(4)} requests: completed ${count("completed")}, rejected ${count("rejected")}, `
        + `cancelled ${count("cancelled")}, failed ${count("failed")}, hung ${count("hung")}; `
        + `completed p50 ${ms(percentile(completed, 0.5))} p99 ${ms(percentile(completed, 0.99))}; rejected p50 ${ms(percentile(rejected, 0.5))}`);
    for (const outcome of outcomes.filter((item) => item.kind === "failed" || item.kind === "hung").slice(0, 10)) {
        console.log(`    ${outcome.kind}: ${outcome.label}: ${outcome.detail}`);
    }
}

const checks: { name: string; ok: boolean; detail: string }[] = [];
function check(name: string, ok: boolean, detail = ""): void {
    checks.push({ name, ok, detail });
}

port = await freePort();
const modelsDir = process.env.MAPLE_MODELS_DIR ?? join(repoRoot, ".maple-cache", "models");
// --expose-gc and a SIGUSR2 handler let the bench run a full garbage collection in the server before
// each RSS reading (see rssAfterGc).
const collectOnSignal = `data:text/javascript,${encodeURIComponent("process.on('SIGUSR2', () => globalThis.gc?.());")}`;
const server = spawn(process.execPath, ["--expose-gc", "--import", collectOnSignal, `${repoRoot}bin/maple.cjs`, "serve", "--model", "synthetic:maple-tiny", "--port", String(port),
    "--threads", "2", "--max-queue-depth", String(maxQueueDepth), "--parallel", String(parallel), "--log-level", "warn"],
{ env: { ...process.env, MAPLE_MODELS_DIR: modelsDir }, stdio: ["ignore", "ignore", "pipe"] });
let serverStderr = "";
server.stderr.on("data", (data: Buffer) => (serverStderr = (serverStderr + data.toString()).slice(-4000)));
const watchdog = setTimeout(() => {
    console.log(`FAIL: the run exceeded ${runLimitMs / 1000} s`);
    server.kill("SIGKILL");
    process.exit(1);
}, runLimitMs);

const runStartedAt = performance.now();
/** Other work on the machine skews every latency here: the 1-minute load average, next to the figures. */
const load = (): string => loadavg()[0]!.toFixed(2);
try {
    await waitForHealth(`http://127.0.0.1:${port}`, server, 120_000);
    const readyAfterMs = performance.now() - runStartedAt;
    // Warm-up: every slot generates once, each kind of request is served once, and a client leaves
    // mid-stream, so what the first requests allocate for good (each slot's KV cache pages, the
    // template, V8's code) is in the RSS baseline, and growth after it means memory kept per request.
    for (let round = 0; round < 2; round++) {
        await Promise.all(Array.from({ length: parallel * 2 }, (_, index) => exchange(burstExchange(index, "warm-up"))));
    }
    await exchange({ label: "warm-up", path: "/v1/completions", body: longCompletion("warm-up", true), leave: { afterFirstEvent: true } });
    await waitForIdle(15_000);
    const rssWarm = await rssAfterGc();
    const rssBefore = rssWarm.after;
    console.log(`Maple on synthetic:maple-tiny, port ${port}: --threads 2 --parallel ${parallel} --max-queue-depth ${maxQueueDepth}; `
        + `bursts of ${burstSize}, max_tokens ${maxTokens}; ready after ${(readyAfterMs / 1000).toFixed(1)} s; RSS after warm-up ${rssBefore.toFixed(1)} MB `
        + `(${rssWarm.before.toFixed(1)} MB before a full GC); load average ${load()}\n`);

    const first = await burst("burst 1");
    summarize("burst 1", first.outcomes);
    console.log(`    /health during the burst: peak queue_depth ${first.peakQueue}, peak active ${first.peakActive}`);

    // Slow clients run beside everything that follows: they must hold neither a slot nor the others up.
    const slowHeaders = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    const slowBody = JSON.stringify({ prompt: "Slowly", max_tokens: 2 });
    const slowloris = Array.from({ length: 3 }, () => trickle(slowHeaders, slowlorisCutWithinMs + 10_000));
    const slowBodyStartedAt = performance.now();
    const slowBodyClient = trickleBody(slowBody);

    const leaving = await departures();
    summarize("clients that leave", leaving.outcomes);
    console.log(`    queue_depth while 4 waited behind 4 held streams: ${leaving.queuedSeen}; idle again ${leaving.idleAfterMs === undefined ? "never" : `${leaving.idleAfterMs.toFixed(0)} ms`} after the last left`);

    // The departures left the server idle; the slow body is still arriving (a byte a second).
    const duringSlow = await health();
    const slowBodyStillArriving = performance.now() - slowBodyStartedAt < Buffer.byteLength(slowBody) * 1000;
    const second = await burst("burst 2");
    summarize("burst 2", second.outcomes);
    console.log(`    /health during the burst: peak queue_depth ${second.peakQueue}, peak active ${second.peakActive}`);

    const slowlorisResults = await Promise.all(slowloris);
    const slowBodyResult = await slowBodyClient;
    const cutAfter = slowlorisResults.map((result) => result.closedAfterMs);
    const slowlorisReplies = slowlorisResults.map((result) => `${result.reply.status ?? "none"} ${(() => {
        try {
            return (JSON.parse(result.reply.text) as { error?: { code?: string } }).error?.code ?? "";
        } catch {
            return "";
        }
    })()}`.trim());
    console.log(`${"slowloris".padEnd(22)}    3 sockets, headers at 1 byte/s: closed by the server after `
        + `${cutAfter.map((ms) => (ms === undefined ? "never" : `${(ms / 1000).toFixed(1)} s`)).join(", ")} (${slowlorisResults.map((r) => r.sentBytes).join(", ")} bytes sent), answers: ${slowlorisReplies.join(", ")}`);
    console.log(`${"slow body".padEnd(22)}    1 request, ${Buffer.byteLength(slowBody)}-byte body at 1 byte/s: HTTP ${slowBodyResult.status ?? "none"} `
        + `(${slowBodyResult.kind}) after ${((slowBodyResult.settledAt - slowBodyStartedAt) / 1000).toFixed(1)} s; /health while it trickled: active ${duringSlow.active}, queue_depth ${duringSlow.queue_depth}`);

    // More of the same, to tell memory kept per request (RSS climbing round after round) from
    // allocator and V8 heap settling (a step, then flat).
    const rssTrend = [await rssAfterGc()];
    const repeated: Outcome[] = [];
    for (let round = 1; round <= rounds; round++) {
        const burstRound = await burst(`round ${round}`);
        const leavingRound = await departures();
        repeated.push(...burstRound.outcomes, ...leavingRound.outcomes);
        await waitForIdle(15_000);
        rssTrend.push(await rssAfterGc());
    }
    if (rounds > 0) {
        summarize(`${rounds} more rounds`, repeated);
        console.log(`    each a burst of ${burstSize} and the 20 clients that leave; RSS after a full GC, after the slow clients and after each round: `
            + `${rssTrend.map((rss) => rss.after.toFixed(1)).join(" → ")} MB (before the GC: ${rssTrend.map((rss) => rss.before.toFixed(1)).join(" → ")} MB)`);
    }

    const idle = await waitForIdle(15_000);
    const end = idle?.health ?? await health();
    const rssEnd = await rssAfterGc();
    const rssAfter = rssEnd.after;
    console.log(`\n/health at the end: queue_depth ${end.queue_depth}, active ${end.active}; RSS after a full GC ${rssBefore.toFixed(1)} MB → ${rssAfter.toFixed(1)} MB `
        + `(${rssAfter - rssBefore >= 0 ? "+" : ""}${(rssAfter - rssBefore).toFixed(1)} MB; bound +${rssBoundMb} MB; ${rssEnd.before.toFixed(1)} MB before the GC); run ${((performance.now() - runStartedAt) / 1000).toFixed(0)} s; load average ${load()}`);

    const all = [...first.outcomes, ...leaving.outcomes, ...second.outcomes, ...repeated];
    const totals = (kind: Kind): number => all.filter((outcome) => outcome.kind === kind).length;
    console.log(`totals: ${all.length} requests: completed ${totals("completed")}, rejected ${totals("rejected")}, cancelled ${totals("cancelled")}, `
        + `failed ${totals("failed")}, hung ${totals("hung")}`);

    check("no request hung", totals("hung") === 0, `${totals("hung")} hung`);
    check("every answer was one well-formed response (none answered twice, no in-band errors)", totals("failed") === 0, `${totals("failed")} failed`);
    for (const [name, result] of [["burst 1", first], ["burst 2", second]] as const) {
        const settled = result.outcomes.filter((outcome) => outcome.kind === "completed" || outcome.kind === "rejected").length;
        check(`${name}: every request completed or got 503 engine_overloaded with Retry-After`, settled === burstSize, `${settled} of ${burstSize}`);
        check(`${name}: the queue bound held (queue_depth ≤ ${maxQueueDepth}, active ≤ ${parallel})`,
            result.peakQueue <= maxQueueDepth && result.peakActive <= parallel, `peak ${result.peakQueue} queued, ${result.peakActive} active`);
        check(`${name}: some requests were served`, result.outcomes.some((outcome) => outcome.kind === "completed"));
    }
    check("clients that left freed their slots and queue places", leaving.idleAfterMs !== undefined);
    check("requests queued behind held slots were seen waiting", leaving.queuedSeen > 0, `queue_depth ${leaving.queuedSeen}`);
    check("slowloris sockets were closed by the server", cutAfter.every((ms) => ms !== undefined && ms <= slowlorisCutWithinMs),
        cutAfter.map((ms) => (ms === undefined ? "never" : `${(ms / 1000).toFixed(1)} s`)).join(", "));
    check("a slow body held no slot while it trickled", slowBodyStillArriving && duringSlow.active === 0 && duringSlow.queue_depth === 0,
        `${slowBodyStillArriving ? "still arriving" : "already arrived"}; active ${duringSlow.active}, queue_depth ${duringSlow.queue_depth}`);
    check("a slow body within the request timeout was served", slowBodyResult.kind === "completed", `${slowBodyResult.kind} ${slowBodyResult.detail}`);
    check("/health queue_depth and active back to 0", end.queue_depth === 0 && end.active === 0, `queue_depth ${end.queue_depth}, active ${end.active}`);
    check(`RSS grew by less than ${rssBoundMb} MB`, rssAfter - rssBefore < rssBoundMb, `${(rssAfter - rssBefore).toFixed(1)} MB`);
    check("the server is still running", server.exitCode === null && server.signalCode === null);
} catch (error) {
    check("the run completed", false, (error as Error).message);
} finally {
    clearTimeout(watchdog);
    const running = server.exitCode === null && server.signalCode === null;
    const exited = running ? new Promise<number | null>((resolve) => server.once("exit", (code) => resolve(code))) : Promise.resolve(server.exitCode);
    const stoppingAt = performance.now();
    if (running) server.kill("SIGTERM");
    const code = await Promise.race([exited, sleep(40_000).then(() => "timeout" as const)]);
    if (code === "timeout") server.kill("SIGKILL");
    console.log(`server exit after SIGTERM: ${code} in ${((performance.now() - stoppingAt) / 1000).toFixed(1)} s`);
}

console.log("");
for (const item of checks) console.log(`${item.ok ? "PASS" : "FAIL"}  ${item.name}${item.detail === "" ? "" : ` (${item.detail})`}`);
const failed = checks.filter((item) => !item.ok);
if (failed.length > 0) {
    if (serverStderr !== "") console.log(`\nserver stderr (last lines):\n${serverStderr}`);
    process.exit(1);
}

/** A request whose body arrives a byte a second; settles like any exchange. */
function trickleBody(body: string): Promise<Outcome & { settledAt: number }> {
    const startedAt = performance.now();
    return new Promise((resolve) => {
        const reader = new ResponseReader();
        const socket = connect(port, "127.0.0.1");
        let sent = 0;
        let settled = false;
        const settle = (kind: Kind, detail: string): void => {
            if (settled) return;
            settled = true;
            clearInterval(timer);
            clearTimeout(deadline);
            socket.destroy();
            const settledAt = performance.now();
            resolve({ kind, label: "slow body", status: reader.status, latencyMs: settledAt - startedAt, detail, settledAt });
        };
        socket.write(`POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`);
        const timer = setInterval(() => {
            if (sent < body.length) socket.write(body[sent++]!);
        }, 1000);
        const deadline = setTimeout(() => settle("hung", "no answer"), body.length * 1000 + deadlineMs);
        socket.on("data", (data: Buffer) => reader.push(data));
        socket.on("error", (error) => settle("failed", error.message));
        socket.on("close", () => {
            reader.end();
            const verdict = judge(reader, false);
            settle(verdict.kind, verdict.detail);
        });
    });
}

import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../helpers/freePort.js";
import { exact } from "../helpers/grammar.js";
import { Exposition } from "../helpers/prometheus.js";
import { parseSse } from "../helpers/sse.js";
import { testModelsDir } from "../helpers/testServer.js";
import { waitFor } from "../helpers/waitFor.js";

/**
 * Real fleets on loopback for the fleet tests and bench/fleet: Maple replicas as `maple serve`
 * child processes (synthetic maple-tiny, one thread each), behind the real HAProxy or NGINX
 * running the configurations shipped in deploy/, with only their addresses rewritten.
 */

const repoRoot = new URL("../../../", import.meta.url).pathname;
const bin = join(repoRoot, "bin", "maple.cjs");

export interface Replica {
    /** Its MAPLE_REPLICA_ID, as `x-maple-replica` shows it; also its server name in the balancers. */
    name: string;
    port: number;
    url: string;
    child: ChildProcess;
    /** Resolves with the exit code (or null) and signal once the process is gone. */
    exited: Promise<[number | null, NodeJS.Signals | null]>;
    output(): string;
}

/** `maple serve` with the fleet tests' settings; `env` adds or overrides MAPLE_* variables. */
export function spawnReplica(name: string, port: number, env: Record<string, string> = {}): Replica {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("MAPLE_")));
    const child = spawn(process.execPath, [bin, "serve"], {
        cwd: repoRoot,
        env: {
            ...clean,
            MAPLE_MODEL: "synthetic:maple-tiny",
            MAPLE_MODELS_DIR: testModelsDir,
            MAPLE_HOST: "127.0.0.1",
            MAPLE_PORT: String(port),
            MAPLE_THREADS: "1",
            MAPLE_PARALLEL: "4",
            MAPLE_CONTEXT_SIZE: "1024",
            MAPLE_REPLICA_ID: name,
            MAPLE_LOG_LEVEL: "warn",
            // In-flight streams must finish however slow a shared machine makes them.
            MAPLE_SHUTDOWN_GRACE: "300",
            ...env
        },
        stdio: ["ignore", "pipe", "pipe"]
    });
    let output = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
    return { name, port, url: `http://127.0.0.1:${port}`, child, exited, output: () => output };
}

/** Polls a replica's /health until it answers 200 (fails if the process exits first). */
export async function waitHealthy(replica: Replica, timeoutMs = 300_000): Promise<void> {
    await waitFor(async () => {
        if (replica.child.exitCode !== null || replica.child.signalCode !== null) {
            throw new Error(`${replica.name} exited early:\n${replica.output()}`);
        }
        const response = await fetch(`${replica.url}/health`).catch(() => undefined);
        await response?.body?.cancel();
        return response?.status === 200 ? true : undefined;
    }, `${replica.name} to be healthy`, timeoutMs);
}

/** Starts `count` replicas named maple1…mapleN side by side and waits until all are healthy. */
export async function startReplicas(count: number, env: (name: string) => Record<string, string> = () => ({})): Promise<Replica[]> {
    const replicas: Replica[] = [];
    for (let index = 1; index <= count; index += 1) {
        const name = `maple${index}`;
        replicas.push(spawnReplica(name, await freePort(), env(name)));
    }
    try {
        await Promise.all(replicas.map((replica) => waitHealthy(replica)));
    } catch (error) {
        await stopReplicas(replicas);
        throw error;
    }
    return replicas;
}

/** SIGKILLs what still runs. */
export async function stopReplicas(replicas: readonly Replica[]): Promise<void> {
    await Promise.all(replicas.map(async (replica) => {
        if (replica.child.exitCode === null && replica.child.signalCode === null) {
            replica.child.kill("SIGKILL");
            await replica.exited;
        }
    }));
}

export interface Balancer {
    kind: "haproxy" | "nginx";
    url: string;
    stop(): Promise<void>;
    /** HAProxy only: its stats per server (`show stat` on the stats socket). */
    stats(): Promise<ServerStats[]>;
}

export interface ServerStats {
    backend: string;
    server: string;
    /** UP, DOWN, "UP 1/2", … */
    status: string;
    /** Retries (wretr) and redispatches (wredis) counted on this server. */
    retries: number;
    redispatches: number;
}

/** The shipped deploy/haproxy/haproxy.cfg with the replicas' loopback addresses, a loopback bind and a stats socket of its own. */
export async function startHaproxy(replicas: readonly Replica[]): Promise<Balancer> {
    const dir = await mkdtemp(join(tmpdir(), "maple-haproxy-"));
    const port = await freePort();
    const socket = join(dir, "stats.sock");
    const shipped = await readFile(join(repoRoot, "deploy", "haproxy", "haproxy.cfg"), "utf8");
    const config = rewriteAddresses(shipped, replicas)
        .replace(/^(\s*)bind :8080$/m, `$1bind 127.0.0.1:${port}`)
        .replace(/stats socket \S+/, `stats socket ${socket}`);
    assert.ok(config.includes(`bind 127.0.0.1:${port}`) && config.includes(socket), "the shipped haproxy.cfg has the expected shape");
    const path = join(dir, "haproxy.cfg");
    await writeFile(path, config);
    const child = spawn("haproxy", ["-db", "-f", path], { stdio: ["ignore", "pipe", "pipe"] });
    const output = collect(child);
    const balancer: Balancer = {
        kind: "haproxy",
        url: `http://127.0.0.1:${port}`,
        stop: () => stopProcess(child, "SIGTERM", dir),
        stats: async () => parseStats(await statsSocketCommand(socket, "show stat"))
    };
    // Ready once every server of both backends reads UP.
    await waitFor(async () => {
        if (child.exitCode !== null) throw new Error(`haproxy exited:\n${output()}`);
        const stats = await balancer.stats().catch(() => []);
        return stats.length === 2 * replicas.length && stats.every((row) => row.status === "UP") ? true : undefined;
    }, "haproxy to see every replica UP", 30_000);
    return balancer;
}

/** The shipped deploy/nginx/maple.conf, included in a minimal nginx.conf of the test's own, with loopback addresses. */
export async function startNginx(replicas: readonly Replica[]): Promise<Balancer> {
    const dir = await mkdtemp(join(tmpdir(), "maple-nginx-"));
    // nginx's workers run as nobody when started by root: they need to reach the temp paths.
    await chmod(dir, 0o755);
    const port = await freePort();
    const shipped = await readFile(join(repoRoot, "deploy", "nginx", "maple.conf"), "utf8");
    const site = rewriteAddresses(shipped, replicas).replace(/^(\s*)listen 8080;$/m, `$1listen 127.0.0.1:${port};`);
    assert.ok(site.includes(`listen 127.0.0.1:${port};`), "the shipped maple.conf has the expected shape");
    await writeFile(join(dir, "maple.conf"), site);
    const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((name) => `${name}_temp_path ${join(dir, name)};`).join(" ");
    await writeFile(join(dir, "nginx.conf"), [
        "daemon off;",
        `pid ${join(dir, "nginx.pid")};`,
        "worker_processes 1;",
        "events { worker_connections 1024; }",
        `http { access_log off; ${temp} include ${join(dir, "maple.conf")}; }`
    ].join("\n"));
    const child = spawn("nginx", ["-p", dir, "-c", join(dir, "nginx.conf"), "-e", join(dir, "error.log")], { stdio: ["ignore", "pipe", "pipe"] });
    const output = collect(child);
    await waitFor(async () => {
        if (child.exitCode !== null) throw new Error(`nginx exited:\n${output()}`);
        return await canConnect(port) ? true : undefined;
    }, "nginx to listen", 30_000);
    return {
        kind: "nginx",
        url: `http://127.0.0.1:${port}`,
        stop: () => stopProcess(child, "SIGTERM", dir),
        stats: () => Promise.reject(new Error("open-source nginx has no per-server stats"))
    };
}

/** Replaces the shipped example addresses 10.0.0.11:8080, 10.0.0.12:8080, … by the replicas' loopback ports. */
function rewriteAddresses(config: string, replicas: readonly Replica[]): string {
    let rewritten = config;
    replicas.forEach((replica, index) => {
        const example = `10.0.0.${11 + index}:8080`;
        assert.ok(rewritten.includes(example), `the shipped config names ${example}`);
        rewritten = rewritten.replaceAll(example, `127.0.0.1:${replica.port}`);
    });
    assert.ok(!/10\.0\.0\.\d+:8080/.test(rewritten), "every shipped server has a replica");
    return rewritten;
}

function collect(child: ChildProcess): () => string {
    let output = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    return () => output;
}

async function stopProcess(child: ChildProcess, signal: NodeJS.Signals, dir: string): Promise<void> {
    if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, "exit");
        child.kill(signal);
        await exited;
    }
    await rm(dir, { recursive: true, force: true });
}

async function canConnect(port: number): Promise<boolean> {
    return new Promise((resolve) => {
        const socket = createConnection({ host: "127.0.0.1", port }, () => {
            socket.destroy();
            resolve(true);
        });
        socket.on("error", () => resolve(false));
    });
}

async function statsSocketCommand(path: string, command: string): Promise<string> {
    return new Promise((resolve, reject) => {
        let text = "";
        const socket = createConnection({ path }, () => socket.end(`${command}\n`));
        socket.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
        socket.on("end", () => resolve(text));
        socket.on("error", reject);
    });
}

/** `show stat`'s CSV: one row per server (frontends and backend totals left out). */
function parseStats(csv: string): ServerStats[] {
    const [header, ...lines] = csv.trim().split("\n");
    assert.ok(header !== undefined && header.startsWith("# "), `not show stat output: ${csv.slice(0, 200)}`);
    const columns = header.slice(2).split(",");
    const column = (name: string): number => {
        const index = columns.indexOf(name);
        assert.ok(index !== -1, `show stat has no ${name} column`);
        return index;
    };
    const [pxname, svname, status, wretr, wredis] = ["pxname", "svname", "status", "wretr", "wredis"].map(column) as [number, number, number, number, number];
    return lines.map((line) => line.split(",")).filter((fields) => !["FRONTEND", "BACKEND"].includes(fields[svname] ?? ""))
        .map((fields) => ({
            backend: fields[pxname] ?? "",
            server: fields[svname] ?? "",
            status: fields[status] ?? "",
            retries: Number(fields[wretr] || 0),
            redispatches: Number(fields[wredis] || 0)
        }));
}

export interface ChatOutcome {
    /** HTTP status, or 0 when no response arrived. */
    status: number;
    /** `x-maple-replica` of the replica that answered. */
    replica: string | undefined;
    /** A 200 whose body arrived whole: a JSON body, or a stream ending in [DONE] with no error event. */
    ok: boolean;
    /** The assistant's text. */
    text: string;
    usage: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens: number } } | undefined;
    /** Why it failed, when it did. */
    failure?: string;
}

export interface ChatRequest {
    messages: { role: string; content: string }[];
    /** The exact answer, forced with a grammar. */
    answer: string;
    stream?: boolean;
    /** The affinity key and where it travels. */
    key?: { value: string; in: "header" | "prompt_cache_key" | "user" };
    /** Called once the response's head arrived (streams: mid-generation from then on). */
    onHead?: (replica: string | undefined) => void;
}

/** One chat completion through `baseUrl`; never throws: a failure is reported in the outcome. */
export async function chat(baseUrl: string, request: ChatRequest): Promise<ChatOutcome> {
    const body: Record<string, unknown> = {
        messages: request.messages,
        max_tokens: 64,
        grammar: exact(request.answer),
        // The answer as content (Maple's template opens a think block otherwise).
        chat_template_kwargs: { enable_thinking: false },
        stream: request.stream === true,
        ...(request.stream === true ? { stream_options: { include_usage: true } } : {})
    };
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (request.key?.in === "header") headers["x-session-id"] = request.key.value;
    else if (request.key !== undefined) body[request.key.in] = request.key.value;
    let status = 0;
    let replica: string | undefined;
    try {
        const response = await fetch(`${baseUrl}/v1/chat/completions`, { method: "POST", headers, body: JSON.stringify(body) });
        status = response.status;
        replica = response.headers.get("x-maple-replica") ?? undefined;
        request.onHead?.(replica);
        const text = await response.text();
        if (status !== 200) return { status, replica, ok: false, text: "", usage: undefined, failure: `HTTP ${status}: ${text.slice(0, 200)}` };
        if (request.stream !== true) {
            const parsed = JSON.parse(text) as { choices: { message: { content: string } }[]; usage: ChatOutcome["usage"] };
            return { status, replica, ok: true, text: parsed.choices[0]?.message.content ?? "", usage: parsed.usage };
        }
        const events = parseSse(text).map((event) => event.data);
        if (events.at(-1) !== "[DONE]") return { status, replica, ok: false, text: "", usage: undefined, failure: "the stream ended without [DONE]" };
        const chunks = events.slice(0, -1).map((event) => JSON.parse(event) as {
            error?: unknown; usage?: ChatOutcome["usage"] | null; choices?: { delta?: { content?: string } }[];
        });
        const error = chunks.find((chunk) => chunk.error !== undefined);
        if (error !== undefined) return { status, replica, ok: false, text: "", usage: undefined, failure: `error event ${JSON.stringify(error.error)}` };
        const content = chunks.map((chunk) => chunk.choices?.[0]?.delta?.content ?? "").join("");
        return { status, replica, ok: true, text: content, usage: chunks.find((chunk) => chunk.usage != null)?.usage ?? undefined };
    } catch (error) {
        return { status, replica, ok: false, text: "", usage: undefined, failure: `${(error as Error).message} ${String((error as Error).cause ?? "")}` };
    }
}

/** A replica's /metrics, parsed. */
export async function replicaMetrics(replica: Replica): Promise<Exposition> {
    return new Exposition(await (await fetch(`${replica.url}/metrics`)).text());
}

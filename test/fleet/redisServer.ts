import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "../helpers/waitFor.js";
import { freePort } from "../helpers/freePort.js";

/**
 * A real redis-server (Debian's; .ci/run installs it) on a free loopback port, with its own data
 * directory: no RDB snapshots, and AOF (fsync on every write) only when `durable`, so a stopped and
 * restarted server keeps what it confirmed.
 */
export interface RedisServer {
    url: string;
    port: number;
    /** SIGTERM (a durable server writes its AOF) and wait for the exit; `start()` brings it back on the same port and directory. */
    stop(): Promise<void>;
    start(): Promise<void>;
    /** SIGSTOP / SIGCONT: a Redis that keeps its connections but answers nothing (a hung or partitioned server). */
    pause(): void;
    resume(): void;
    /** Stops it for good and removes its directory. */
    destroy(): Promise<void>;
}

export async function startRedisServer(options: { durable?: boolean } = {}): Promise<RedisServer> {
    const dir = await mkdtemp(join(tmpdir(), "maple-redis-"));
    const port = await freePort();
    let child: ChildProcess | undefined;
    let output = "";
    const args = [
        "--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
        ...(options.durable === true ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"])
    ];
    const start = async (): Promise<void> => {
        const process = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
        child = process;
        process.stdout!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
        process.stderr!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
        await waitFor(async () => {
            if (process.exitCode !== null) throw new Error(`redis-server exited:\n${output}`);
            return await answersPing(port) ? true : undefined;
        }, "redis-server to answer PING", 30_000);
    };
    const stop = async (): Promise<void> => {
        const running = child;
        if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
        const exited = once(running, "exit");
        running.kill("SIGTERM");
        await exited;
    };
    await start();
    return {
        url: `redis://127.0.0.1:${port}`, port, stop, start,
        pause: () => child?.kill("SIGSTOP"),
        resume: () => child?.kill("SIGCONT"),
        destroy: async () => {
            await stop();
            await rm(dir, { recursive: true, force: true });
        }
    };
}

/** One PING over a raw socket (inline command): true once the server answers +PONG. */
async function answersPing(port: number): Promise<boolean> {
    return new Promise((resolve) => {
        const socket = createConnection({ host: "127.0.0.1", port }, () => socket.write("PING\r\n"));
        socket.setEncoding("utf8").once("data", (data: string) => {
            socket.destroy();
            resolve(data.startsWith("+PONG"));
        });
        socket.on("error", () => resolve(false));
    });
}

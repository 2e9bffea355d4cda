import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";

export { freePort } from "../test/helpers/freePort.js";

export const repoRoot = new URL("../../", import.meta.url).pathname;

/** The same prompt for every contender: plain prose, about `approxTokens` tokens. */
export function benchPrompt(approxTokens: number): string {
    const sentence = "The quick brown fox jumps over the lazy dog while the river runs to the sea. ";
    return sentence.repeat(Math.max(1, Math.round(approxTokens / 17)));
}

/**
 * Run `run`'s prompt: a different first token each run, so no run reuses the previous run's
 * cached prompt. bench/speed gives the servers and Maple's engine the same one per run.
 */
export function runPrompt(run: number, approxTokens: number): string {
    return `Run ${run}: ${benchPrompt(approxTokens)}`;
}

export function median(values: readonly number[]): number {
    const sorted = [...values].sort((a, b) => a - b);
    const middle = Math.floor(sorted.length / 2);
    return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export function percentile(values: readonly number[], fraction: number): number {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? NaN;
}

/** Runs a node script as a child and parses the JSON it prints last on stdout. */
export async function runJsonChild<T>(args: string[], env: Record<string, string> = {}): Promise<T> {
    const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
    let output = "";
    child.stdout.on("data", (data: Buffer) => (output += data.toString()));
    const [code] = await once(child, "exit") as [number | null];
    if (code !== 0) throw new Error(`${args.join(" ")} exited with ${code}`);
    const lastLine = output.trim().split("\n").at(-1) ?? "";
    return JSON.parse(lastLine) as T;
}

export async function waitForHealth(url: string, child: ChildProcess, timeoutMs = 600_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
        if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
        try {
            const response = await fetch(`${url}/health`);
            if (response.status === 200) return;
        } catch {
            // not listening yet
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error("server did not become ready");
}

/** Resident set size of a process in MB, from /proc (Linux). */
export async function rssMb(pid: number): Promise<number> {
    const { readFile } = await import("node:fs/promises");
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
    return kb / 1024;
}

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { freePort } from "../helpers/freePort.js";
import { createMemoryCgroup, type MemoryCgroup } from "../helpers/memoryCgroup.js";
import { testModelsDir } from "../helpers/testServer.js";
import { waitFor } from "../helpers/waitFor.js";

const repoRoot = new URL("../../../", import.meta.url).pathname;
const bin = join(repoRoot, "bin", "maple.cjs");
const gib = 2 ** 30;
/** The container's limit: what a pod's `limits.memory` sets. Small beside this machine's memory, large beside maple-tiny. */
const limitBytes = 2 * gib;

interface LogLine {
    msg: string;
    [field: string]: unknown;
}

describe("maple serve inside a container's memory limit (cgroup)", () => {
    let cgroup: MemoryCgroup | string;
    before(async () => {
        cgroup = await createMemoryCgroup("maple-memory-limit-test", limitBytes);
    });
    after(async () => {
        if (typeof cgroup !== "string") await cgroup.remove();
    });

    it("sizes its defaults from the limit, says so at start, and serves four long prompts at once", async (t) => {
        if (typeof cgroup === "string") {
            t.skip(cgroup);
            return;
        }
        const port = await freePort();
        const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("MAPLE_") && name !== "UV_THREADPOOL_SIZE"));
        // Default settings but the port, one thread and the models' folder: the memory-sized defaults (weights, slots' context, RAM cache) are the ones chosen.
        const child = spawn("sh", ["-c", `echo $$ > ${cgroup.procsFile} && exec "$0" "$@"`, process.execPath, bin, "serve",
            "--model", "synthetic:maple-tiny", "--port", String(port), "--host", "127.0.0.1", "--threads", "1", "--models-dir", testModelsDir, "--log-level", "info"], {
            cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"]
        });
        let output = "";
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
        child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
        const exited = once(child, "exit");
        const base = `http://127.0.0.1:${port}`;
        try {
            await waitFor(async () => {
                if (child.exitCode !== null || child.signalCode !== null) throw new Error(`maple exited (${child.exitCode ?? child.signalCode}):\n${output}`);
                const health = await fetch(`${base}/health`).then(async (response) => response.json() as Promise<{ status: string }>, () => undefined);
                return health?.status === "ok" ? health : undefined;
            }, "maple serve to report ok on /health inside the cgroup", 120_000);
            const logs = output.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as LogLine);

            const memory = logs.find((line) => line.msg.startsWith("memory:"));
            assert.ok(memory !== undefined, output);
            assert.match(memory.msg, /the container's limit/);
            assert.equal(memory.memoryGiB, "2.0");
            const ready = logs.find((line) => line.msg.startsWith("model ready"));
            assert.ok(ready !== undefined, output);
            // The slots' KV budget is what the limit leaves (here well under 1 GiB), not the machine's memory.
            const budgetGiB = Number(/ in the ([\d.]+) GiB left/.exec(String(ready.contextReason))?.[1] ?? /([\d.]+) GiB available/.exec(String(ready.contextReason))?.[1]);
            assert.ok(budgetGiB < 2, `context sized within the limit: ${String(ready.contextReason)}`);

            // Four long prompts at once, every slot busy: nothing is killed for memory.
            const longPrompt = "The quick brown fox jumps over the lazy dog. ".repeat(120);
            const answers = await Promise.all([0, 1, 2, 3].map(async (index) => {
                const response = await fetch(`${base}/v1/completions`, {
                    method: "POST", headers: { "content-type": "application/json" },
                    body: JSON.stringify({ prompt: `${index}: ${longPrompt}`, max_tokens: 8, ignore_eos: true, temperature: 0 })
                });
                return { status: response.status, body: await response.json() as { usage: { prompt_tokens: number; completion_tokens: number } } };
            }));
            for (const answer of answers) {
                assert.equal(answer.status, 200);
                assert.ok(answer.body.usage.prompt_tokens > 1000);
                assert.equal(answer.body.usage.completion_tokens, 8);
            }
            assert.equal(child.exitCode, null, "still running");
            child.kill("SIGTERM");
            const [code] = await exited as [number | null];
            assert.equal(code, 0, output);
        } finally {
            if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
        }
    });
});

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { createServer as createNetServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { isSwitch, settings } from "../../src/config/settings.js";
import { ensureSyntheticModel } from "../../src/models/synthetic/index.js";
import { freePort } from "../helpers/freePort.js";
import { testModelsDir } from "../helpers/testServer.js";
import { waitFor } from "../helpers/waitFor.js";

const repoRoot = new URL("../../../", import.meta.url).pathname;
const bin = join(repoRoot, "bin", "maple.cjs");
const packageJson = JSON.parse(await readFile(join(repoRoot, "package.json"), "utf8")) as { version: string };

/**
 * The environment without any MAPLE_* variable of the machine running the tests, nor the test
 * runner's UV_THREADPOOL_SIZE (the command sets its own), plus `env`.
 */
function cleanEnv(env: Record<string, string>): NodeJS.ProcessEnv {
    const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("MAPLE_") && name !== "UV_THREADPOOL_SIZE"));
    return { ...base, ...env };
}

interface Finished {
    code: number | null;
    signal: NodeJS.Signals | null;
    stdout: string;
    stderr: string;
}

/** Runs `node bin/maple.cjs ...args` to its end (killed after a generous deadline so a hang fails instead of stalling). */
async function runMaple(args: string[], env: Record<string, string> = {}): Promise<Finished> {
    const child = spawn(process.execPath, [bin, ...args], { cwd: repoRoot, env: cleanEnv(env), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    const [code, signal] = await once(child, "close") as [number | null, NodeJS.Signals | null];
    clearTimeout(killer);
    return { code, signal, stdout, stderr };
}

/** Lines of a stream, without the empty tail. */
const lines = (text: string): string[] => text.split("\n").filter((line) => line.trim() !== "");
const hasStackTrace = (text: string): boolean => /^\s+at .+[(:]/m.test(text);

describe("maple CLI", () => {
    let tempDir: string;
    before(async () => {
        tempDir = await mkdtemp(join(tmpdir(), "maple-cli-test-"));
    });
    after(async () => rm(tempDir, { recursive: true, force: true }));

    it("serve --help exits 0 and documents every flag and MAPLE_* variable of the settings table", async () => {
        const { code, stdout } = await runMaple(["serve", "--help"]);
        assert.equal(code, 0);
        assert.match(stdout, /Usage: maple serve/);
        for (const setting of settings) {
            // A boolean setting is a switch: shown as --[no-]FLAG, without a value.
            const usage = isSwitch(setting) ? `--[no-]${setting.flag} ` : `--${setting.flag} ${setting.valueName} `;
            assert.ok(stdout.includes(usage), `--help is missing ${usage}`);
            assert.ok(stdout.includes(setting.env), `--help is missing ${setting.env}`);
        }
    });

    it("takes a boolean flag without a word (--swa-full, --no-webui) and goes on to the next flag", async () => {
        // Stopped by the invalid --port after them: the switches parsed, and neither took "--port" as its value.
        const { code, stdout, stderr } = await runMaple(["serve", "--swa-full", "--no-webui", "--strict-model", "--port", "abc"],
            { MAPLE_MODEL: join(tempDir, "never-read.gguf") });
        assert.equal(code, 2, stderr);
        assert.equal(stderr.trim(), "maple serve: --port must be a whole number, got \"abc\"");
        assert.equal(stdout, "", "nothing started");
    });

    it("prints its version, and refuses an unknown command or flag with exit 2", async () => {
        const version = await runMaple(["--version"]);
        assert.equal(version.code, 0);
        assert.equal(version.stdout.trim(), packageJson.version);

        for (const args of [["frobnicate"], ["serve", "--no-such-flag", "1"]]) {
            const { code, stderr } = await runMaple(args);
            assert.equal(code, 2, args.join(" "));
            assert.equal(lines(stderr).length, 1, stderr);
            assert.ok(!hasStackTrace(stderr), stderr);
        }
    });

    for (const [what, args, env, named] of [
        ["MAPLE_PORT=abc", [], { MAPLE_PORT: "abc" }, "MAPLE_PORT"],
        ["MAPLE_PORT out of range", [], { MAPLE_PORT: "70000" }, "MAPLE_PORT"],
        ["MAPLE_STRICT_MODEL=maybe", [], { MAPLE_STRICT_MODEL: "maybe" }, "MAPLE_STRICT_MODEL"],
        ["MAPLE_TEMPERATURE=hot", [], { MAPLE_TEMPERATURE: "hot" }, "MAPLE_TEMPERATURE"],
        ["--port abc (the flag wins over a valid variable)", ["--port", "abc"], { MAPLE_PORT: "8080" }, "--port"]
    ] as const) {
        it(`stops on ${what} with exit 2 and one line naming ${named}, no stack trace`, async () => {
            const { code, stdout, stderr } = await runMaple(["serve", ...args], { MAPLE_MODEL: join(tempDir, "never-read.gguf"), ...env });
            assert.equal(code, 2);
            assert.equal(lines(stderr).length, 1, stderr);
            assert.ok(stderr.includes(named), stderr);
            assert.ok(!hasStackTrace(stderr), stderr);
            assert.equal(stdout, "", "nothing started");
        });
    }

    it("exits 1 with one line naming the address and the setting when a port is taken, no stack trace", async () => {
        const taken = createNetServer();
        taken.listen(0, "127.0.0.1");
        await once(taken, "listening");
        const port = String((taken.address() as AddressInfo).port);
        try {
            for (const [env, setting] of [
                [{ MAPLE_PORT: port }, "--port or MAPLE_PORT"],
                [{ MAPLE_PORT: "0", MAPLE_OLLAMA_PORT: port }, "--ollama-port or MAPLE_OLLAMA_PORT"]
            ] as const) {
                const { code, signal, stderr } = await runMaple(["serve"], { MAPLE_MODEL: join(tempDir, "never-read.gguf"), MAPLE_LOG_LEVEL: "warn", ...env });
                assert.equal(signal, null, "it exits by itself: nothing keeps it alive");
                assert.equal(code, 1, stderr);
                assert.equal(lines(stderr).length, 1, stderr);
                assert.equal(stderr.trim(), `maple serve: cannot listen on 127.0.0.1:${port}: the port is already in use (another server, or Maple already running?); choose another with ${setting}`);
            }
        } finally {
            taken.close();
        }
    });

    it("reports an unexpected start-up error (a --host that does not resolve) in one line, exit 1, the stack trace only at --log-level debug", async () => {
        // "a..b" has an empty label: the resolver refuses it without asking a DNS server, so this is
        // fast offline too. No start-up check names it (ListenError knows taken and refused ports).
        const env = { MAPLE_MODEL: join(tempDir, "never-read.gguf"), MAPLE_PORT: "0" };
        const quiet = await runMaple(["serve", "--host", "a..b", "--log-level", "error"], env);
        assert.equal(quiet.code, 1, quiet.stderr);
        assert.equal(lines(quiet.stderr).length, 1, quiet.stderr);
        assert.ok(!hasStackTrace(quiet.stderr), quiet.stderr);
        assert.match(quiet.stderr, /^maple serve: could not start: getaddrinfo ENOTFOUND a\.\.b \(unexpected; run again with --log-level debug for the stack trace to report\)\n$/);

        const debug = await runMaple(["serve", "--host", "a..b", "--log-level", "debug"], env);
        assert.equal(debug.code, 1, debug.stderr);
        assert.match(lines(debug.stderr)[0] ?? "", /^maple serve: could not start: getaddrinfo ENOTFOUND a\.\.b \(unexpected; its stack trace follows\)$/);
        assert.ok(hasStackTrace(debug.stderr), debug.stderr);
    });

    it("reports a command that cannot load (dist/ not built) in one line, exit 1, the stack trace only at MAPLE_LOG_LEVEL=debug", async () => {
        // The entry alone, without the dist/ it imports: a checkout that was never built.
        const unbuilt = join(tempDir, "unbuilt");
        await mkdir(join(unbuilt, "bin"), { recursive: true });
        await copyFile(bin, join(unbuilt, "bin", "maple.cjs"));
        const run = async (env: Record<string, string>): Promise<Finished> => {
            const child = spawn(process.execPath, [join(unbuilt, "bin", "maple.cjs"), "serve"], { cwd: unbuilt, env: cleanEnv(env), stdio: ["ignore", "ignore", "pipe"] });
            let stderr = "";
            child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
            const [code, signal] = await once(child, "close") as [number | null, NodeJS.Signals | null];
            return { code, signal, stdout: "", stderr };
        };
        const quiet = await run({});
        assert.equal(quiet.code, 1, quiet.stderr);
        assert.equal(lines(quiet.stderr).length, 1, quiet.stderr);
        assert.ok(!hasStackTrace(quiet.stderr), quiet.stderr);
        assert.match(quiet.stderr, /^maple: cannot start: Cannot find module '.*dist\/src\/cli\/main\.js'.* \(run 'npm install' in Maple's folder, which builds dist\/\)\n$/);

        const debug = await run({ MAPLE_LOG_LEVEL: "debug" });
        assert.equal(debug.code, 1, debug.stderr);
        assert.match(lines(debug.stderr)[0] ?? "", /^maple: cannot start: .* \(its stack trace follows\)$/);
        assert.ok(hasStackTrace(debug.stderr), debug.stderr);
    });

    /** A model that cannot be served: the process ends non-zero with a clear line on stderr. */
    async function serveBadModel(path: string): Promise<string> {
        const { code, stderr } = await runMaple(["serve", "--model", path], { MAPLE_PORT: "0", MAPLE_THREADS: "1", MAPLE_LOG_LEVEL: "warn" });
        assert.notEqual(code, 0);
        assert.notEqual(code, null, "it exits rather than being killed");
        assert.ok(!hasStackTrace(stderr), stderr);
        const last = lines(stderr).at(-1) ?? "";
        assert.match(last, /^maple serve: /);
        return last;
    }

    it("exits non-zero naming a model file that does not exist", async () => {
        const message = await serveBadModel("/nonexistent.gguf");
        assert.ok(message.includes("/nonexistent.gguf"), message);
        assert.match(message, /no such file/i);
    });

    it("exits non-zero saying a file that is not GGUF is not GGUF", async () => {
        const path = join(tempDir, "notes.gguf");
        await writeFile(path, "these are not the weights you are looking for\n");
        const message = await serveBadModel(path);
        assert.ok(message.includes(path), message);
        assert.match(message, /not a GGUF/);
    });

    it("exits non-zero on a truncated GGUF", async () => {
        const headerOnly = join(tempDir, "header-only.gguf");
        await writeFile(headerOnly, Buffer.from("GGUF\x03\x00\x00\x00\x00\x00", "latin1"));
        const message = await serveBadModel(headerOnly);
        assert.ok(message.includes(headerOnly), message);
        assert.match(message, /truncated/);

        // A real model cut short: its header is fine, its tensor data ends early; llama.cpp refuses it.
        const tiny = await readFile(await ensureSyntheticModel("maple-tiny", testModelsDir));
        const cutShort = join(tempDir, "cut-short.gguf");
        await writeFile(cutShort, tiny.subarray(0, tiny.length >> 1));
        await serveBadModel(cutShort);
    });

    /** `maple serve` on synthetic:maple-tiny as a child process, once it reports ok on /health. */
    async function startServe(port: number, args: string[], env: Record<string, string>) {
        const child = spawn(process.execPath, [bin, "serve", "--model", "synthetic:maple-tiny", "--port", String(port), ...args], {
            cwd: repoRoot,
            env: cleanEnv(env),
            stdio: ["ignore", "pipe", "pipe"]
        });
        let output = "";
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
        child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
        const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
        const stop = (): void => {
            if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
        };
        const base = `http://127.0.0.1:${port}`;
        try {
            const health = await waitFor(async () => {
                if (child.exitCode !== null) throw new Error(`maple exited early (${child.exitCode}):\n${output}`);
                const response = await fetch(`${base}/health`).catch(() => undefined);
                const body = await response?.json() as { status: string; model: string } | undefined;
                return body?.status === "ok" ? body : undefined;
            }, "maple serve to report ok on /health", 90_000);
            return { child, base, health, exited, stop, output: () => output };
        } catch (error) {
            stop();
            throw error;
        }
    }

    it("serves synthetic:maple-tiny end to end, from flags and MAPLE_* variables, and exits 0 on SIGTERM", async () => {
        const port = await freePort();
        const apiKey = "cli-test-key";
        const { child, base, health, exited, stop, output } = await startServe(port, ["--model-id", "from-flag"], {
            MAPLE_HOST: "127.0.0.1",
            MAPLE_PORT: "1", // the flag wins
            MAPLE_MODEL_ID: "from-variable",
            MAPLE_THREADS: "1",
            MAPLE_MODELS_DIR: testModelsDir,
            MAPLE_CONTEXT_SIZE: "1024",
            MAPLE_API_KEY: apiKey,
            MAPLE_LOG_LEVEL: "warn"
        });
        try {
            assert.equal(health.model, "from-flag");

            const request = (authorization?: string): Promise<Response> => fetch(`${base}/v1/completions`, {
                method: "POST",
                headers: { "content-type": "application/json", ...(authorization === undefined ? {} : { authorization }) },
                body: JSON.stringify({ prompt: "CLI:", max_tokens: 16, grammar: "root ::= \"from the cli\"" })
            });
            assert.equal((await request()).status, 401, "MAPLE_API_KEY from the environment is enforced");
            const response = await request(`Bearer ${apiKey}`);
            assert.equal(response.status, 200);
            const body = await response.json() as { model: string; choices: { text: string }[] };
            assert.equal(body.choices[0]!.text, "from the cli");
            assert.equal(body.model, "from-flag");

            child.kill("SIGTERM");
            const [code, signal] = await exited;
            assert.equal(signal, null, output());
            assert.equal(code, 0, output());
            // Not a terminal: the load's progress comes as log lines at the log's level, nothing else is written.
            for (const line of lines(output())) assert.doesNotThrow(() => JSON.parse(line), `not a log line: ${line}`);
        } finally {
            stop();
        }
    });

    const hugePagesHere = existsSync(join(repoRoot, "build", "execve.node")) && existsSync("/sys/kernel/mm/transparent_hugepage/enabled")
        && !readFileSync("/sys/kernel/mm/transparent_hugepage/enabled", "utf8").includes("[never]");
    it("restarts itself once, same pid, with glibc.malloc.hugetlb=1 and reads the weights into huge pages; MAPLE_HUGE_PAGES=0 maps them",
        { skip: !hugePagesHere && "needs Linux with glibc >= 2.35, THP not 'never' and build/execve.node (npm install builds it)" }, async () => {
            const launch = async (env: Record<string, string>) => {
                const server = await startServe(await freePort(), [], { MAPLE_THREADS: "1", MAPLE_MODELS_DIR: testModelsDir, MAPLE_CONTEXT_SIZE: "1024", MAPLE_LOG_LEVEL: "warn", ...env });
                try {
                    const environment = (await readFile(`/proc/${server.child.pid}/environ`, "utf8")).split("\0");
                    const smaps = await readFile(`/proc/${server.child.pid}/smaps_rollup`, "utf8");
                    const anonHugeKiB = Number(/AnonHugePages:\s+(\d+)/.exec(smaps)?.[1] ?? 0);
                    return { tunables: environment.find((entry) => entry.startsWith("GLIBC_TUNABLES=")), anonHugeKiB, output: server.output() };
                } finally {
                    server.stop();
                }
            };
            const huge = await launch({});
            assert.equal(huge.tunables, "GLIBC_TUNABLES=glibc.malloc.hugetlb=1", "the process that answers /health, started as the spawned pid");
            assert.match(huge.output, /"weights":"ram"/, huge.output);
            // maple-tiny's ~90 MB of weights, at least partly in 2 MiB pages.
            assert.ok(huge.anonHugeKiB >= 2048, `AnonHugePages ${huge.anonHugeKiB} kB`);
            const mapped = await launch({ MAPLE_HUGE_PAGES: "0" });
            assert.equal(mapped.tunables, undefined);
            assert.match(mapped.output, /"weights":"mmap","weightsReason":"no huge pages/, mapped.output);
        });

    it("runs llama.cpp's decode calls on one libuv pool thread unless UV_THREADPOOL_SIZE says otherwise", { skip: !existsSync("/proc/self/task") && "needs /proc" }, async () => {
        // libuv starts all of its pool threads at once, on first use: the thread counts of two
        // otherwise equal servers differ by exactly the difference of their pool sizes.
        const threadsAfterGenerating = async (env: Record<string, string>): Promise<number> => {
            const port = await freePort();
            const server = await startServe(port, [], { MAPLE_THREADS: "1", MAPLE_MODELS_DIR: testModelsDir, MAPLE_CONTEXT_SIZE: "1024", MAPLE_LOG_LEVEL: "warn", ...env });
            try {
                const response = await fetch(`${server.base}/v1/completions`, {
                    method: "POST",
                    headers: { "content-type": "application/json" },
                    body: JSON.stringify({ prompt: "pool:", max_tokens: 8, grammar: "root ::= \"one thread\"" })
                });
                assert.equal(response.status, 200, await response.text());
                assert.ok(!server.output().includes("UV_THREADPOOL_SIZE"), `no pool-size warning: ${server.output()}`);
                return (await readdir(`/proc/${server.child.pid}/task`)).length;
            } finally {
                server.stop();
            }
        };
        const byDefault = await threadsAfterGenerating({});
        const withFour = await threadsAfterGenerating({ UV_THREADPOOL_SIZE: "4" });
        assert.equal(withFour - byDefault, 3, `threads: ${byDefault} by default, ${withFour} with UV_THREADPOOL_SIZE=4`);
    });
});

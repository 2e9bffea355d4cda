import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import { modelsCommand, pullCommand, rmCommand, type CommandIo } from "../../src/cli/modelCommands.js";
import { officialFiles, officialTq2File, standInModelBytes, startFakeHuggingFaceServer, type FakeHuggingFaceServer } from "../helpers/fakeHuggingFaceServer.js";
import { completeChunksSaved } from "../helpers/ipullChunkMap.js";
import { waitFor } from "../helpers/waitFor.js";

const repoRoot = new URL("../../../", import.meta.url).pathname;
const bin = join(repoRoot, "bin", "maple.cjs");
const MiB = 1024 * 1024;

interface Finished {
    code: number | null;
    stdout: string;
    stderr: string;
}

const lines = (text: string): string[] => text.split("\n").filter((line) => line.trim() !== "");
const hasStackTrace = (text: string): boolean => /^\s+at .+[(:]/m.test(text);

/** An in-process CommandIo writing into strings. */
function captureIo(extra: Partial<CommandIo> = {}): CommandIo & { out: () => string; err: () => string } {
    let out = "";
    let err = "";
    const sink = (append: (text: string) => void) => new Writable({
        write(chunk: Buffer, _encoding, callback) {
            append(chunk.toString());
            callback();
        }
    });
    return {
        stdout: sink((text) => (out += text)),
        stderr: sink((text) => (err += text)),
        ...extra,
        out: () => out,
        err: () => err
    };
}

describe("maple pull / models / rm", { timeout: 180_000 }, () => {
    const small = standInModelBytes(3 * MiB + 5, 7);
    // three of ipull's 5 MiB chunks, so an interrupted pull can leave some done
    const big = standInModelBytes(12 * MiB + 321, 9);
    const official = standInModelBytes(MiB + 11, 3);
    let hub: FakeHuggingFaceServer;
    let tempRoot: string;
    let env: Record<string, string>;

    before(async () => {
        hub = await startFakeHuggingFaceServer({
            files: { "fake-owner/round-trip/small.gguf": small, "fake-owner/resume/big.gguf": big, ...officialFiles(official) }
        });
        tempRoot = await mkdtemp(join(tmpdir(), "maple-models-cli-test-"));
        const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("MAPLE_") && !["MODEL_ENDPOINT", "HF_TOKEN", "UV_THREADPOOL_SIZE"].includes(name)));
        env = { ...base as Record<string, string>, HF_ENDPOINT: hub.endpoint, HF_TOKEN_PATH: join(tempRoot, "no-token") };
    });
    after(async () => {
        await hub.close();
        await rm(tempRoot, { recursive: true, force: true });
    });

    function spawnMaple(args: string[], extraEnv: Record<string, string> = {}) {
        const child = spawn(process.execPath, [bin, ...args], { cwd: repoRoot, env: { ...env, ...extraEnv }, stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
        child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
        const finished = (async (): Promise<Finished> => {
            const killer = setTimeout(() => child.kill("SIGKILL"), 90_000);
            const [code] = await once(child, "close") as [number | null];
            clearTimeout(killer);
            return { code, stdout, stderr };
        })();
        return { child, finished, stderr: () => stderr };
    }
    const runMaple = (args: string[], extraEnv: Record<string, string> = {}): Promise<Finished> => spawnMaple(args, extraEnv).finished;

    it("every command has --help", async () => {
        for (const command of ["pull", "models", "rm"]) {
            const { code, stdout } = await runMaple([command, "--help"]);
            assert.equal(code, 0, command);
            assert.match(stdout, new RegExp(`^Usage: maple ${command} `), command);
            assert.match(stdout, /--models-dir DIR[\s\S]*MAPLE_MODELS_DIR/, command);
        }
        const { stdout, stderr } = await runMaple(["--help"]);
        assert.match(stdout + stderr, /maple pull MODEL[\s\S]*maple models[\s\S]*maple rm MODEL/);
    });

    it("pull, models, rm round-trip through the models directory (MAPLE_MODELS_DIR, as serve uses it)", async () => {
        const modelsDir = join(tempRoot, "round-trip");
        const spec = "hf:fake-owner/round-trip/small.gguf";
        const pulled = await runMaple(["pull", spec], { MAPLE_MODELS_DIR: modelsDir });
        assert.equal(pulled.code, 0, pulled.stderr);
        assert.match(pulled.stdout, new RegExp(`^${spec}: ready at ${modelsDir}/hf/.+\\.gguf\\n$`));
        assert.match(pulled.stderr, /Downloading hf:fake-owner\/round-trip\/small\.gguf: .*100%/);

        const listed = await runMaple(["models", "--json", "--models-dir", modelsDir]);
        assert.equal(listed.code, 0, listed.stderr);
        const { models } = JSON.parse(listed.stdout) as { models: { spec: string; kind: string; status: string; bytes: number; file: string }[] };
        assert.deepEqual(models.map(({ spec: s, kind, status, bytes }) => ({ spec: s, kind, status, bytes })),
            [{ spec, kind: "huggingface", status: "complete", bytes: small.length }]);
        const table = await runMaple(["ls", "--models-dir", modelsDir]);
        assert.match(table.stdout, new RegExp(`MODEL\\s+SIZE\\s+KIND\\s+STATUS\\s+FILE\\n${spec.replace(/[/.]/g, "\\$&")}\\s+0\\.00 GB\\s+huggingface\\s+complete\\s+hf/`));

        const requestsBefore = hub.requests.length;
        const again = await runMaple(["pull", spec, "--models-dir", modelsDir]);
        assert.equal(again.code, 0);
        assert.equal(hub.requests.length, requestsBefore, "a pulled model is not fetched again");

        const removed = await runMaple(["rm", spec, "--models-dir", modelsDir]);
        assert.equal(removed.code, 0, removed.stderr);
        assert.match(removed.stdout, new RegExp(`^deleted ${spec.replace(/[/.]/g, "\\$&")} \\(hf/`));
        assert.deepEqual(await readdir(join(modelsDir, "hf")), [], "the file and its record are gone");
        const empty = await runMaple(["models", "--models-dir", modelsDir]);
        assert.match(empty.stdout, /^No models in /);
        const missing = await runMaple(["rm", spec, "--models-dir", modelsDir]);
        assert.equal(missing.code, 1);
        assert.equal(lines(missing.stderr).length, 1, missing.stderr);
    });

    it("a pull interrupted mid-way (Ctrl-C) keeps its partial file and the next pull resumes it", async () => {
        const modelsDir = join(tempRoot, "resume");
        const spec = "hf:fake-owner/resume/big.gguf";
        hub.holdAt(6 * MiB); // chunk 1 (5-10 MiB) stalls; chunks 0 and 2 can finish
        const firstRequest = hub.requests.length;
        const ranged = () => hub.requests.slice(firstRequest).filter((request) => request.range !== undefined);
        const interrupted = spawnMaple(["pull", spec, "--models-dir", modelsDir]);
        try {
            await waitFor(() => (ranged().some((request) => request.held) && ranged().filter((request) => request.completed).length >= 2 ? true : undefined),
                "two chunks done and one held", 60_000);
            // the client has them too (7.3 of 12.3 MB, with part of the held chunk: its progress line for 60%)
            await waitFor(() => (/: [6-9]\d%/.test(interrupted.stderr()) ? true : undefined), "the pull to report 60%", 60_000);
            // ipull saves its chunk map after each chunk, asynchronously: the resume below reads it.
            await waitFor(async () => ((await completeChunksSaved(join(modelsDir, "hf"), big.length) ?? 0) >= 2 ? true : undefined),
                "the chunk map saved with two chunks done", 60_000);
            interrupted.child.kill("SIGINT");
            const { code, stderr } = await interrupted.finished;
            assert.equal(code, 130, stderr);
            assert.match(lines(stderr).at(-1) ?? "", /^maple pull: interrupted; .* run 'maple pull hf:fake-owner\/resume\/big\.gguf' again to resume$/);
        } finally {
            interrupted.child.kill("SIGKILL");
            hub.release();
        }
        const listed = JSON.parse((await runMaple(["models", "--json", "--models-dir", modelsDir])).stdout) as { models: { status: string }[] };
        assert.deepEqual(listed.models.map((model) => model.status), ["partial"]);

        const resumeFrom = hub.requests.length;
        const resumed = await runMaple(["pull", spec, "--models-dir", modelsDir]);
        assert.equal(resumed.code, 0, resumed.stderr);
        const ranges = hub.requests.slice(resumeFrom).flatMap((request) => (request.range ? [request.range] : []));
        assert.ok(ranges.some((range) => range.start > 0), `the resume asked for later chunks: ${JSON.stringify(ranges)}`);
        const refetched = ranges.reduce((sum, range) => sum + range.end - range.start, 0);
        assert.ok(refetched < big.length, `the resume fetched ${refetched} of ${big.length} bytes: not a restart`);
        const path = lines(resumed.stdout)[0]!.replace(/^.*: ready at /, "");
        assert.ok((await readFile(path)).equals(big), "the resumed file is byte-identical");
        assert.deepEqual((await readdir(join(modelsDir, "hf"))).filter((name) => name.endsWith(".ipull")), []);
    });

    it("maple serve with no model exits 1 on a 404 for maple-preview, without falling back to random weights", async () => {
        const emptyHub = await startFakeHuggingFaceServer({ files: {} });
        try {
            const { code, stdout, stderr } = await runMaple(["serve"], {
                HF_ENDPOINT: emptyHub.endpoint, MAPLE_PORT: "0", MAPLE_MODELS_DIR: join(tempRoot, "serve-404"), MAPLE_LOG_LEVEL: "fatal"
            });
            assert.equal(code, 1, stdout + stderr);
            assert.ok(!hasStackTrace(stderr), stderr);
            assert.deepEqual(lines(stderr), [
                `maple serve: hf:deepgrove/maple-preview-GGUF/maple-preview-TQ2_0-head-Q4_K.gguf was not found (HTTP 404 Not Found from ${emptyHub.endpoint}deepgrove/maple-preview-GGUF/resolve/main/maple-preview-TQ2_0-head-Q4_K.gguf)`
            ]);
            assert.ok(!/synthetic/i.test(stdout + stderr), "no fallback");
            const pull = await runMaple(["pull", "maple-preview"], { HF_ENDPOINT: emptyHub.endpoint, MAPLE_MODELS_DIR: join(tempRoot, "pull-404") });
            assert.equal(pull.code, 1);
            assert.match(lines(pull.stderr).at(-1) ?? "", /^maple pull: .*was not found \(HTTP 404/);
        } finally {
            await emptyHub.close();
        }
    });

    describe("the official short name, with a small stand-in file and its known hash", () => {
        const spec = `hf:${officialTq2File}`;
        const sha256 = createHash("sha256").update(official).digest("hex");
        let savedEndpoint: string | undefined;
        before(() => {
            savedEndpoint = process.env.HF_ENDPOINT;
            process.env.HF_ENDPOINT = hub.endpoint;
        });
        after(() => {
            if (savedEndpoint === undefined) delete process.env.HF_ENDPOINT;
            else process.env.HF_ENDPOINT = savedEndpoint;
        });

        it("pulls maple-preview, checks its sha256 with progress, lists it by short name, removes it", async () => {
            const modelsDir = join(tempRoot, "official");
            const io = captureIo({ knownFiles: { [spec]: { bytes: official.length, sha256 } } });
            assert.equal(await pullCommand(["maple-preview", "--models-dir", modelsDir], io), 0, io.err());
            assert.match(io.err(), /Downloading maple-preview: /);
            assert.match(io.err(), /Checking sha256 maple-preview: .*100%/);
            assert.match(io.out(), /^maple-preview: ready at .*hf_deepgrove_maple-preview-TQ2_0-head-Q4_K\.gguf\n$/);

            const listing = captureIo({ knownFiles: io.knownFiles });
            assert.equal(await modelsCommand(["--models-dir", modelsDir], listing), 0);
            assert.match(listing.out(), /\nmaple-preview:tq2\s+0\.00 GB\s+huggingface\s+complete\s+hf\/hf_deepgrove_maple-preview-TQ2_0-head-Q4_K\.gguf\n$/);

            const removal = captureIo({ knownFiles: io.knownFiles });
            assert.equal(await rmCommand(["maple-preview:tq2", "--models-dir", modelsDir], removal), 0, removal.err());
            assert.match(removal.out(), /^deleted maple-preview:tq2 /);
        });

        it("refuses a file whose sha256 is wrong: one line, exit 1, nothing left", async () => {
            const modelsDir = join(tempRoot, "official-wrong");
            const io = captureIo({ knownFiles: { [spec]: { bytes: official.length, sha256: "f".repeat(64) } } });
            assert.equal(await pullCommand(["maple-preview", "--models-dir", modelsDir], io), 1);
            const last = lines(io.err()).at(-1) ?? "";
            assert.match(last, new RegExp(`^maple pull: Refusing ${spec.replace(/[/.]/g, "\\$&")}: its sha256 is ${sha256}, expected f{64}; the file was deleted`));
            const listing = captureIo();
            await modelsCommand(["--models-dir", modelsDir, "--json"], listing);
            assert.deepEqual((JSON.parse(listing.out()) as { models: unknown[] }).models, []);
        });
    });
});

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { downloadModel, type DownloadProgress } from "../../src/engine/modelDownload.js";
import { defaultModelSpec, isHuggingFaceSpec, resolveHuggingFaceModel } from "../../src/models/huggingFace.js";
import { createProgressReporter } from "../../src/cli/progress.js";
import { startFakeHuggingFaceServer, type FakeHuggingFaceServer } from "../helpers/fakeHuggingFaceServer.js";
import { completeChunksSaved } from "../helpers/ipullChunkMap.js";
import { waitFor } from "../helpers/waitFor.js";

const MiB = 1024 * 1024;
/** ipull's chunk size: resume granularity. */
const chunkSize = 5 * MiB;
const owner = "fake-owner";

/** A GGUF v3 header with no tensors and no metadata, then deterministic filler bytes. */
function makeGgufBytes(size: number, seed: number): Buffer {
    const bytes = Buffer.alloc(size);
    bytes.write("GGUF", 0, "ascii");
    bytes.writeUInt32LE(3, 4);
    bytes.writeBigUInt64LE(0n, 8);
    bytes.writeBigUInt64LE(0n, 16);
    let state = seed;
    for (let i = 24; i < size; i++) {
        state = (state * 1103515245 + 12345) >>> 0;
        bytes[i] = state >>> 24;
    }
    return bytes;
}

describe("model downloads from a fake Hugging Face", { timeout: 30_000 }, () => {
    const smallFile = makeGgufBytes(3 * MiB + 123, 1);
    const quantFile = makeGgufBytes(MiB + 7, 2);
    // Three ipull chunks (5 + 5 + 2 MiB), so an interrupted transfer can leave some done.
    const bigFile = makeGgufBytes(12 * MiB + 54_321, 3);
    const savedEnv = { ...process.env };
    let server: FakeHuggingFaceServer;
    let tempRoot: string;

    before(async () => {
        server = await startFakeHuggingFaceServer({
            files: {
                [`${owner}/tiny-model/tiny-model.Q8_0.gguf`]: smallFile,
                [`${owner}/tiny-model-GGUF/tiny-model.Q4_K_M.gguf`]: quantFile,
                [`${owner}/big-model/big-model.gguf`]: bigFile,
                [`${owner}/url-model/resolve-me.gguf`]: smallFile
            },
            manifests: { [`${owner}/tiny-model-GGUF:Q4_K_M`]: "tiny-model.Q4_K_M.gguf" }
        });
        tempRoot = await mkdtemp(path.join(tmpdir(), "maple-hf-test-"));
        process.env.HF_ENDPOINT = server.endpoint;
        // MODEL_ENDPOINT would win over HF_ENDPOINT; a real token must not leak into requests.
        delete process.env.MODEL_ENDPOINT;
        delete process.env.HF_TOKEN;
        process.env.HF_TOKEN_PATH = path.join(tempRoot, "no-token");
    });

    after(async () => {
        process.env = savedEnv;
        await server.close();
        await rm(tempRoot, { recursive: true, force: true });
    });

    test("downloads an hf: file once, byte-identical, with progress; the second call makes no request", async () => {
        const modelsDir = path.join(tempRoot, "first");
        const progress: DownloadProgress[] = [];
        const uri = `hf:${owner}/tiny-model/tiny-model.Q8_0.gguf`;

        const modelPath = await resolveHuggingFaceModel(uri, modelsDir, { onProgress: (p) => progress.push(p) });

        assert.equal(path.dirname(modelPath), path.join(modelsDir, "hf"));
        assert.ok(modelPath.endsWith(".gguf"), modelPath);
        assert.ok((await readFile(modelPath)).equals(smallFile), "downloaded bytes differ");
        assert.ok(progress.length > 0, "no progress reported");
        assert.equal(Math.max(...progress.map((p) => p.downloadedBytes)), smallFile.length);
        assert.ok(progress.every((p) => p.totalBytes === smallFile.length));

        const requestsBefore = server.requests.length;
        assert.equal(await resolveHuggingFaceModel(uri, modelsDir), modelPath);
        assert.equal(server.requests.length, requestsBefore, "the second call went to the server");
    });

    test("resolves hf:owner/repo:quant through the manifest endpoint, then reuses the file offline", async () => {
        const modelsDir = path.join(tempRoot, "quant");
        const uri = `hf:${owner}/tiny-model-GGUF:Q4_K_M`;

        const modelPath = await resolveHuggingFaceModel(uri, modelsDir);

        assert.equal(path.basename(modelPath), `hf_${owner}_tiny-model.Q4_K_M.gguf`);
        assert.ok((await readFile(modelPath)).equals(quantFile));
        assert.ok(server.requests.some((r) => r.path === `/v2/${owner}/tiny-model-GGUF/manifests/Q4_K_M`));

        const requestsBefore = server.requests.length;
        assert.equal(await resolveHuggingFaceModel(uri, modelsDir), modelPath);
        assert.equal(server.requests.length, requestsBefore);
    });

    test("an https URL is named after its last path segment and reused offline", async () => {
        const dir = path.join(tempRoot, "url");
        const url = `${server.endpoint}${owner}/url-model/resolve/main/resolve-me.gguf`;

        const modelPath = await downloadModel(url, dir);

        assert.equal(modelPath, path.join(dir, "resolve-me.gguf"));
        assert.ok((await readFile(modelPath)).equals(smallFile));
        const requestsBefore = server.requests.length;
        assert.equal(await downloadModel(url, dir), modelPath);
        assert.equal(server.requests.length, requestsBefore);
    });

    test("an aborted download keeps its partial file and the next call resumes it with a Range request", async () => {
        const dir = path.join(tempRoot, "resume");
        const uri = `hf:${owner}/big-model/big-model.gguf`;
        const controller = new AbortController();
        let maxDownloaded = 0;

        // Chunk 1 (5-10 MiB) stalls at 6 MiB; chunks 0 and 2 can finish and be recorded as done.
        server.holdAt(6 * MiB);
        const firstRequest = server.requests.length;
        const interrupted = downloadModel(uri, dir, {
            signal: controller.signal,
            onProgress: (p) => {
                maxDownloaded = Math.max(maxDownloaded, p.downloadedBytes);
            }
        });
        const ranged = () => server.requests.slice(firstRequest).filter((r) => r.range !== undefined);
        await waitFor(() => (ranged().some((r) => r.held) && ranged().filter((r) => r.completed).length >= 2 ? true : undefined), "two chunks done and one held");
        await waitFor(() => (maxDownloaded >= 2 * chunkSize ? true : undefined), "client progress past two chunks");
        // ipull saves its chunk map after each chunk, asynchronously: the resume below reads it.
        await waitFor(async () => ((await completeChunksSaved(dir, bigFile.length) ?? 0) >= 2 ? true : undefined), "the chunk map saved with two chunks done");
        controller.abort();
        await assert.rejects(interrupted, { name: "AbortError" });
        server.release();

        const leftovers = await readdir(dir);
        assert.ok(leftovers.some((name) => name.endsWith(".gguf.ipull")), `no partial file in ${leftovers.join(", ")}`);
        assert.ok(!leftovers.some((name) => name.endsWith(".gguf")), "a final file exists after the abort");

        const resumeRequest = server.requests.length;
        const resumedProgress: DownloadProgress[] = [];
        const modelPath = await downloadModel(uri, dir, { onProgress: (p) => resumedProgress.push(p) });

        assert.ok((await readFile(modelPath)).equals(bigFile), "resumed file differs");
        const resumedRanges = server.requests.slice(resumeRequest).flatMap((r) => (r.range ? [r.range] : []));
        assert.ok(resumedRanges.some((range) => range.start > 0), `no Range request from a non-zero offset: ${JSON.stringify(resumedRanges)}`);
        assert.ok(resumedRanges.every((range) => range.start > 0), `the resume fetched from byte 0: ${JSON.stringify(resumedRanges)}`);
        const refetched = resumedRanges.reduce((sum, range) => sum + range.end - range.start, 0);
        assert.ok(refetched < bigFile.length, `resume refetched ${refetched} of ${bigFile.length} bytes`);
        assert.ok((resumedProgress[0]?.downloadedBytes ?? 0) >= chunkSize, "resumed progress did not start from the bytes on disk");
        assert.deepEqual((await readdir(dir)).filter((name) => name.endsWith(".ipull")), []);
    });

    test("a missing file or quantization fails with an error naming the URI", async () => {
        const dir = path.join(tempRoot, "missing");
        const missingFile = `hf:${owner}/tiny-model/does-not-exist.gguf`;
        await assert.rejects(downloadModel(missingFile, dir), (error: Error) => {
            assert.match(error.message, new RegExp(`"${missingFile}"`));
            assert.match(error.message, /not found \(HTTP 404/);
            return true;
        });
        const missingQuant = `hf:${owner}/tiny-model-GGUF:Q2_K`;
        await assert.rejects(downloadModel(missingQuant, dir), (error: Error) => {
            assert.match(error.message, new RegExp(`"${missingQuant}"`));
            return true;
        });
        assert.deepEqual(await readdir(dir).catch(() => []), []);
    });

    test("rejects specs that are not model URIs", async () => {
        await assert.rejects(downloadModel("models/local.gguf", tempRoot), /Unsupported model URI "models\/local.gguf"/);
        await assert.rejects(resolveHuggingFaceModel("https://example.com/x.gguf", tempRoot), TypeError);
    });
});

describe("Hugging Face model specs", () => {
    test("isHuggingFaceSpec accepts hf: URIs only", () => {
        assert.ok(isHuggingFaceSpec("hf:owner/repo/file.gguf"));
        assert.ok(isHuggingFaceSpec("hf:owner/repo:Q4_K_M"));
        assert.ok(isHuggingFaceSpec("huggingface:owner/repo"));
        assert.ok(isHuggingFaceSpec(defaultModelSpec));
        assert.ok(!isHuggingFaceSpec("hf:"));
        assert.ok(!isHuggingFaceSpec("./model.gguf"));
        assert.ok(!isHuggingFaceSpec("https://huggingface.co/owner/repo/resolve/main/file.gguf"));
    });
});

/** A writable that records what was written, optionally posing as a TTY. */
function captureStream(isTTY: boolean): { stream: Writable & { isTTY: boolean }; text: () => string } {
    let written = "";
    const stream = Object.assign(
        new Writable({
            write(chunk: Buffer, _encoding, callback) {
                written += chunk.toString();
                callback();
            }
        }),
        { isTTY }
    );
    return { stream, text: () => written };
}

describe("progress reporter", () => {
    test("off a TTY it writes a line per 10% step, then a final line", () => {
        let clock = 0;
        const { stream, text } = captureStream(false);
        const reporter = createProgressReporter({ label: "Downloading test", stream, now: () => clock });
        const total = 100 * 1_000_000;
        for (let percent = 0; percent <= 100; percent++) {
            clock += 10;
            reporter.update(percent * 1_000_000, total);
        }
        reporter.done();
        reporter.update(total, total);

        const lines = text().trimEnd().split("\n");
        assert.equal(lines.length, 12, text());
        assert.match(lines[0] ?? "", /^Downloading test: 0%, 0\.0\/100\.0 MB$/);
        assert.match(lines[5] ?? "", /^Downloading test: 50%, 50\.0\/100\.0 MB, \d+\.\d MB\/s, ETA [\d.]+s$/);
        assert.match(lines[10] ?? "", /^Downloading test: 100%, 100\.0\/100\.0 MB/);
        assert.match(lines[11] ?? "", /^Downloading test: done in 1\.0s, 100\.0 MB$/);
    });

    test("off a TTY with an unknown total it writes a line every 5 s, and a custom final message", () => {
        let clock = 0;
        const { stream, text } = captureStream(false);
        const reporter = createProgressReporter({ label: "Writing", stream, now: () => clock });
        for (let second = 0; second <= 12; second++) {
            clock = second * 1000;
            reporter.update(second * 2_000_000, 0);
        }
        reporter.done("wrote model.gguf");

        assert.deepEqual(text().trimEnd().split("\n"), [
            "Writing: 0.0 MB",
            "Writing: 10.0 MB, 2.0 MB/s",
            "Writing: 20.0 MB, 2.0 MB/s",
            "Writing: wrote model.gguf"
        ]);
    });

    test("off a TTY a logger receives the lines instead of the stream", () => {
        const { stream, text } = captureStream(false);
        const logged: string[] = [];
        const reporter = createProgressReporter({ label: "Loading", stream, logger: { info: (m) => logged.push(m) }, showBytes: false, now: () => 0 });
        reporter.update(1, 2);
        reporter.done();
        assert.equal(text(), "");
        assert.deepEqual(logged, ["Loading: 50%", "Loading: done in 0.0s"]);
    });

    test("on a TTY it redraws one line at most 10 times a second", () => {
        let clock = 0;
        const { stream, text } = captureStream(true);
        const reporter = createProgressReporter({ label: "Downloading", stream, now: () => clock });
        for (let step = 0; step < 100; step++) {
            clock += 5; // 100 updates over 0.5 s
            reporter.update(step * 1_000_000, 100_000_000);
        }
        reporter.done();
        const output = text();
        assert.equal(output.split("\r\x1b[2K").length - 1, 5 + 1, JSON.stringify(output));
        assert.ok(output.endsWith("\n") && output.split("\n").length === 2, "the bar is not a single line");
        assert.match(output, /Downloading \[#*-*\] \d+%, [\d.]+\/100\.0 MB/);
    });
});

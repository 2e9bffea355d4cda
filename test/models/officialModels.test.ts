import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { HubUnreachableError, ModelSpecError, resolveModel, type ResolveWork } from "../../src/models/resolveModel.js";
import { defaultModelSpec, expandShortName, officialModels, type KnownFiles } from "../../src/models/officialModels.js";
import { ensureSyntheticModel } from "../../src/models/synthetic/index.js";
import {
    officialFiles, officialTq1File, officialTq2File, standInModelBytes, startFakeHuggingFaceServer, useFakeHubEnvironment, type FakeHuggingFaceServer
} from "../helpers/fakeHuggingFaceServer.js";
import { freePort } from "../helpers/freePort.js";
import { testModelsDir } from "../helpers/testServer.js";

const sha256 = (bytes: Buffer): string => createHash("sha256").update(bytes).digest("hex");
const tq2Spec = `hf:${officialTq2File}`;
const tq1Spec = `hf:${officialTq1File}`;

describe("official maple-preview files", { timeout: 120_000 }, () => {
    const tq2 = standInModelBytes(2 * 1024 * 1024 + 17, 1);
    const tq1 = standInModelBytes(1024 * 1024 + 3, 2);
    const knownFiles: KnownFiles = { [tq2Spec]: { bytes: tq2.length, sha256: sha256(tq2) }, [tq1Spec]: { bytes: tq1.length } };
    let restoreEnv: () => void;
    let hub: FakeHuggingFaceServer;
    let emptyHub: FakeHuggingFaceServer;
    let tempRoot: string;
    let dirCount = 0;
    const freshModelsDir = (): string => join(tempRoot, `models-${++dirCount}`);

    before(async () => {
        hub = await startFakeHuggingFaceServer({ files: officialFiles(tq2, tq1) });
        emptyHub = await startFakeHuggingFaceServer({ files: {}, statuses: { [officialTq1File]: 401 } });
        tempRoot = await mkdtemp(join(tmpdir(), "maple-official-test-"));
        restoreEnv = useFakeHubEnvironment(hub.endpoint, tempRoot);
    });
    after(async () => {
        restoreEnv();
        await hub.close();
        await emptyHub.close();
        await rm(tempRoot, { recursive: true, force: true });
    });

    it("short names stand for the two official files; the bare name is the TQ2_0 one, the default", () => {
        assert.equal(defaultModelSpec, "hf:deepgrove/maple-preview-GGUF/maple-preview-TQ2_0-head-Q4_K.gguf");
        assert.equal(expandShortName("maple-preview"), defaultModelSpec);
        assert.equal(expandShortName("maple-preview:tq2"), defaultModelSpec);
        assert.equal(expandShortName("maple-preview:tq1"), "hf:deepgrove/maple-preview-GGUF/maple-preview-TQ1_0-head-Q4_K.gguf");
        assert.equal(expandShortName("./maple-preview"), undefined);
        assert.equal(expandShortName("qwen3"), undefined);
        assert.throws(() => expandShortName("maple-preview:q4"), (error: Error) => error instanceof ModelSpecError && /maple-preview:tq1/.test(error.message));
        assert.deepEqual(officialModels.map((model) => `${model.name}:${model.tag}`), ["maple-preview:tq2", "maple-preview:tq1"]);
    });

    it("with no spec, downloads the TQ2_0 file, checks its sha256 once (with progress), then reuses it offline", async () => {
        const modelsDir = freshModelsDir();
        const work: [ResolveWork, number, number][] = [];
        const fallbacks: string[] = [];
        const model = await resolveModel(undefined, { modelsDir, knownFiles, onProgress: (...args) => work.push(args), onFallback: (reason) => fallbacks.push(reason) });

        assert.deepEqual(fallbacks, []);
        assert.equal(model.kind, "huggingface");
        assert.equal(model.source, defaultModelSpec);
        assert.ok((await readFile(model.path)).equals(tq2));
        assert.ok(hub.requests.some((request) => request.path === `/${officialTq2File.replace("GGUF/", "GGUF/resolve/main/")}`));
        const verify = work.filter(([kind]) => kind === "verify");
        assert.ok(verify.length > 0, "the sha256 check reports progress");
        assert.deepEqual(verify.at(-1), ["verify", tq2.length, tq2.length]);

        const requestsBefore = hub.requests.length;
        const again: ResolveWork[] = [];
        assert.equal((await resolveModel("maple-preview", { modelsDir, knownFiles, onProgress: (kind) => again.push(kind) })).path, model.path);
        assert.equal(hub.requests.length, requestsBefore, "no network for a complete file");
        assert.deepEqual(again, [], "the verified hash is remembered: no second sha256 pass");
    });

    it("maple-preview:tq1 fetches the TQ1_0 file, whose size is checked (no published sha256)", async () => {
        const model = await resolveModel("maple-preview:tq1", { modelsDir: freshModelsDir(), knownFiles });
        assert.ok((await readFile(model.path)).equals(tq1));
        assert.equal(model.source, "maple-preview:tq1");
    });

    it("refuses a file whose announced size is not the known one, before downloading it", async () => {
        const modelsDir = freshModelsDir();
        const requestsBefore = hub.requests.length;
        await assert.rejects(resolveModel(undefined, { modelsDir, knownFiles: { [tq2Spec]: { bytes: tq2.length + 1 } } }), (error: Error) => {
            assert.ok(error instanceof ModelSpecError && !(error instanceof HubUnreachableError));
            assert.match(error.message, new RegExp(`announces ${tq2.length} bytes, but the official file is ${tq2.length + 1} bytes`));
            return true;
        });
        assert.ok(hub.requests.slice(requestsBefore).every((request) => request.method === "HEAD"), "only the probe");
        assert.deepEqual(await readdir(join(modelsDir, "hf")).catch(() => []), []);
    });

    it("refuses and deletes a download whose sha256 does not match; no fallback", async () => {
        const modelsDir = freshModelsDir();
        const fallbacks: string[] = [];
        const wrongHash = { [tq2Spec]: { bytes: tq2.length, sha256: "0".repeat(64) } };
        await assert.rejects(resolveModel(undefined, { modelsDir, knownFiles: wrongHash, onFallback: (reason) => fallbacks.push(reason) }), (error: Error) => {
            assert.ok(error instanceof ModelSpecError);
            assert.match(error.message, new RegExp(`its sha256 is ${sha256(tq2)}, expected 0{64}; the file was deleted`));
            return true;
        });
        assert.deepEqual(fallbacks, []);
        assert.deepEqual((await readdir(join(modelsDir, "hf"))).filter((name) => name.endsWith(".gguf") || name.endsWith(".ipull")), []);
    });

    it("a 404 for the default model is an error, never the offline fallback", async () => {
        process.env.HF_ENDPOINT = emptyHub.endpoint;
        try {
            const fallbacks: string[] = [];
            await assert.rejects(resolveModel(undefined, { modelsDir: freshModelsDir(), knownFiles, onFallback: (reason) => fallbacks.push(reason) }), (error: Error) => {
                assert.ok(error instanceof ModelSpecError && !(error instanceof HubUnreachableError));
                assert.match(error.message, /maple-preview-TQ2_0-head-Q4_K\.gguf was not found \(HTTP 404/);
                return true;
            });
            assert.deepEqual(fallbacks, []);
            await assert.rejects(resolveModel("maple-preview:tq1", { modelsDir: freshModelsDir(), knownFiles }), /refused \(HTTP 401.*HF_TOKEN/);
        } finally {
            process.env.HF_ENDPOINT = hub.endpoint;
        }
    });

    it("an unreachable hub serves synthetic:maple-tiny instead, with a plain warning", async () => {
        process.env.HF_ENDPOINT = `http://127.0.0.1:${await freePort()}/`;
        try {
            const modelsDir = freshModelsDir();
            // the fallback model comes from the shared test cache, not written again
            await ensureSyntheticModel("maple-tiny", testModelsDir);
            const fallbacks: string[] = [];
            const model = await resolveModel(undefined, { modelsDir: testModelsDir, knownFiles, onFallback: (reason) => fallbacks.push(reason) });
            assert.equal(model.source, "synthetic:maple-tiny");
            assert.equal(fallbacks.length, 1);
            assert.match(fallbacks[0]!, /^Cannot reach http:\/\/127\.0\.0\.1:\d+ for hf:deepgrove\/maple-preview-GGUF\/maple-preview-TQ2_0-head-Q4_K\.gguf: ECONNREFUSED/);
            assert.match(fallbacks[0]!, /RANDOM WEIGHTS, its answers are meaningless/);
            // an explicit spec never falls back
            await assert.rejects(resolveModel("maple-preview", { modelsDir, knownFiles }), HubUnreachableError);
        } finally {
            process.env.HF_ENDPOINT = hub.endpoint;
        }
    });
});

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import { gguf, GGMLQuantizationType } from "@huggingface/gguf";
import { ensureSyntheticModel } from "../../src/models/synthetic/index.js";
import { startTestServer, testModelsDir, type TestServer, type WireError } from "../helpers/testServer.js";

const packageJson = JSON.parse(await readFile(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string };

interface Health {
    status: string;
    model: string;
    model_path: string;
    device: string;
    device_names: string[];
    gpu_layers: number;
    model_layers: number;
    dtype: string;
    attention: string;
    load_seconds: number;
    queue_depth: number;
    active: number;
    version: string;
    synthetic: boolean;
    chat_format: string;
}

describe("GET /health", () => {
    let server: TestServer;
    /** Responses taken at once after start-up, while the model is still loading. */
    let whileLoading: { health: Response; models: Response; completions: Response };

    before(async () => {
        server = await startTestServer({ modelId: "maple-health-test" }, { waitReady: false });
        const [health, models, completions] = await Promise.all([
            server.request("/health"),
            server.request("/v1/models"),
            server.post("/v1/completions", { prompt: "x", max_tokens: 4 })
        ]);
        whileLoading = { health, models, completions };
        await server.ready;
    });
    after(async () => server.close());

    it("answers 503 with status loading while the weights load", async () => {
        assert.equal(whileLoading.health.status, 503);
        const body = await whileLoading.health.json() as Partial<Health>;
        assert.equal(body.status, "loading");
        assert.equal(body.model, "maple-health-test");
        assert.equal(body.version, packageJson.version);
    });

    for (const route of ["models", "completions"] as const) {
        it(`makes /v1/${route} answer 503 model_loading with Retry-After while loading`, async () => {
            const response = whileLoading[route];
            assert.equal(response.status, 503);
            const retryAfter = Number(response.headers.get("retry-after"));
            assert.ok(Number.isInteger(retryAfter) && retryAfter > 0, `Retry-After: ${response.headers.get("retry-after")}`);
            const body = await response.json() as WireError;
            assert.equal(body.error.code, "model_loading");
            assert.equal(body.error.type, "server_error");
            assert.ok(body.error.message.length > 0);
        });
    }

    it("reports every field the spec lists once ready, read from the engine and the GGUF", async () => {
        const response = await server.request("/health");
        assert.equal(response.status, 200);
        const health = await response.json() as Health;
        for (const field of ["status", "model", "model_path", "device", "device_names", "gpu_layers", "model_layers", "dtype", "attention", "load_seconds",
            "queue_depth", "active", "version"]) {
            assert.ok(field in health, `missing ${field}`);
        }
        assert.equal(health.status, "ok");
        assert.equal(health.model, "maple-health-test");
        assert.equal(health.model_path, "synthetic:maple-tiny");
        assert.equal(health.device, "cpu");
        assert.deepEqual(health.device_names, []);
        assert.equal(health.gpu_layers, 0);
        // maple-tiny's 4 blocks and its output layer, as llama.cpp counts n_gpu_layers.
        assert.equal(health.model_layers, 5);
        assert.equal(health.synthetic, true);
        // maple-tiny carries Maple's Qwen3 template, recognised by its <tool_call> blocks.
        assert.equal(health.chat_format, "hermes");
        assert.equal(health.version, packageJson.version);
        assert.equal(health.queue_depth, 0);
        assert.equal(health.active, 0);
        assert.equal(typeof health.load_seconds, "number");
        assert.ok(health.load_seconds > 0, `load_seconds ${health.load_seconds}`);
        assert.equal(typeof health.attention, "string");
        assert.ok(health.attention.length > 0);

        // The values are the engine's own, not constants.
        const state = server.host.state;
        assert.equal(state.status, "ready");
        if (state.status !== "ready") return;
        assert.equal(health.dtype, state.engine.model.dtype);
        assert.equal(health.attention, state.engine.runtime.attention);
        assert.equal(health.load_seconds, state.engine.runtime.loadSeconds);
        assert.equal(health.device, state.engine.runtime.device);
    });

    it("describes the weight types the GGUF file really holds (ternary TQ2_0 experts for maple-tiny)", async () => {
        const health = await (await server.request("/health")).json() as Health;
        assert.match(health.dtype, /TQ2_0/);
        const parsed = await gguf(await ensureSyntheticModel("maple-tiny", testModelsDir), { allowLocalFile: true });
        const elementsByType = new Map<string, number>();
        for (const tensor of parsed.tensorInfos) {
            const name = GGMLQuantizationType[tensor.dtype];
            const elements = tensor.shape.reduce((product, size) => product * Number(size), 1);
            elementsByType.set(name, (elementsByType.get(name) ?? 0) + elements);
        }
        const bySize = [...elementsByType.entries()].sort((a, b) => b[1] - a[1]).map(([type]) => type);
        assert.ok(bySize.includes("TQ2_0"));
        assert.ok(health.dtype.startsWith(bySize[0]!), `${health.dtype} should lead with ${bySize[0]}, the type holding most weights`);
        for (const type of bySize.slice(0, 3)) {
            assert.ok(health.dtype.includes(type), `${health.dtype} should mention ${type}`);
        }
    });

    it("still answers ok with an idle queue after a generation", async () => {
        const completion = await server.post("/v1/completions", { prompt: "x", max_tokens: 8, grammar: "root ::= \"done\"" });
        assert.equal(completion.status, 200);
        const health = await (await server.request("/health")).json() as Health;
        assert.equal(health.status, "ok");
        assert.equal(health.queue_depth, 0);
        assert.equal(health.active, 0);
    });
});

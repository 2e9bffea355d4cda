import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { MapleConfig } from "../../src/config/settings.js";
import { exact } from "../helpers/grammar.js";
import { longGeneration, longPlainGeneration, startHeldStream } from "../helpers/longGeneration.js";
import { cached, restoredLength, returningConversation, tokensOf } from "../helpers/returningConversation.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { findVulkanDevice } from "../helpers/vulkan.js";
import { readHealth, waitForHealth } from "../helpers/waitFor.js";

/**
 * A subset of the suite on node-llama-cpp's prebuilt Vulkan build with maple-tiny's layers on the
 * device: Mesa's lavapipe on a machine without a GPU (about 13 tokens a second, against ~250 on
 * the CPU build). The prebuilt addon has none of the patched CPU addon's native methods, so the
 * engine evaluates through node-llama-cpp on both paths (grammar and plain sampling).
 */
const vulkan = await findVulkanDevice();

interface Health {
    device: string;
    device_names: string[];
    gpu_layers: number;
    model_layers: number;
    active: number;
}

const vulkanServer = (overrides: Partial<MapleConfig> = {}): Promise<TestServer> => startTestServer({ gpu: "vulkan", parallel: 1, ...overrides });

async function completion(server: TestServer, body: Record<string, unknown>): Promise<{ text: string; finish: string; tokens: number }> {
    const response = await server.post("/v1/completions", body);
    assert.equal(response.status, 200, await response.clone().text());
    const wire = await response.json() as { choices: { text: string; finish_reason: string }[]; usage: { completion_tokens: number } };
    return { text: wire.choices[0]!.text, finish: wire.choices[0]!.finish_reason, tokens: wire.usage.completion_tokens };
}

describe("maple-tiny on Vulkan, every layer offloaded", { skip: vulkan.skip }, () => {
    let server: TestServer;
    before(async () => {
        server = await vulkanServer();
    });
    after(async () => server?.close());

    it("names the backend, its device and the layers offloaded in /health, on the prebuilt addon", async () => {
        const health = await readHealth(server) as unknown as Health;
        assert.equal(health.device, "vulkan");
        assert.deepEqual(health.device_names, vulkan.skip === undefined ? vulkan.devices : []);
        assert.equal(health.model_layers, 5);
        assert.equal(health.gpu_layers, 5);
        const state = server.host.state;
        assert.equal(state.status, "ready");
        if (state.status !== "ready") return;
        assert.match(state.engine.runtime.engineBuild, /; vulkan$/);
        assert.equal(state.engine.runtime.samplingInDecode, false, "node-llama-cpp's prebuilt Vulkan addon has no decodeBatchAndSample");
        assert.equal(state.engine.runtime.deviceReason, "--gpu vulkan");
        // Lavapipe crashes in llama.cpp's Vulkan flash attention (flashAttentionCrashes); a GPU keeps it.
        const lavapipe = state.engine.runtime.deviceNames.some((name) => name.startsWith("llvmpipe"));
        assert.equal(state.engine.runtime.attention, lavapipe ? "standard attention (llama.cpp)" : "flash attention (llama.cpp)");
    });

    it("writes grammar-forced text exactly, on /v1/completions and /v1/chat/completions", async () => {
        assert.equal((await completion(server, { prompt: "Say it:", max_tokens: 32, grammar: exact("computed on the device") })).text, "computed on the device");
        const response = await server.post("/v1/chat/completions", {
            messages: [{ role: "user", content: "Hello?" }], max_tokens: 48, grammar: exact("Short.\n</think>\n\nHello from Vulkan.")
        });
        assert.equal(response.status, 200, await response.clone().text());
        const message = (await response.json() as { choices: { message: { content: string; reasoning_content: string } }[] }).choices[0]!.message;
        assert.equal(message.content, "Hello from Vulkan.");
        assert.equal(message.reasoning_content, "Short.");
    });

    it("generates on the plain sampler (no grammar), where the CPU addon's direct steps would run: to max_tokens with ignore_eos", async () => {
        const plain = await completion(server, { prompt: "Count:", max_tokens: 24, temperature: 0.7, seed: 5, ignore_eos: true });
        assert.equal(plain.tokens, 24);
        assert.equal(plain.finish, "length");
        assert.ok(plain.text.length > 0);
    });

    for (const [path, generation] of [["grammar-constrained", longGeneration], ["plain-sampling", longPlainGeneration]] as const) {
        it(`frees the slot when a streaming client disconnects on the ${path} path, and serves the next request`, async () => {
            const held = await startHeldStream(server, generation);
            assert.equal((await readHealth(server)).active, 1);
            held.abort();
            await waitForHealth(server, (health) => health.active === 0, "the slot to free after the disconnect", 5_000);
            assert.ok(!held.received().includes("[DONE]"));
            assert.equal((await completion(server, { prompt: "Next:", max_tokens: 16, grammar: exact("served next") })).text, "served next");
        });
    }
});

describe("maple-tiny on Vulkan with two of its five layers offloaded (--gpu-layers 2)", { skip: vulkan.skip }, () => {
    it("reports 2/5 layers and still writes the forced text: the graph is split between the device and the CPU", async () => {
        const server = await vulkanServer({ gpuLayers: 2 });
        try {
            const health = await readHealth(server) as unknown as Health;
            assert.equal(health.gpu_layers, 2);
            assert.equal(health.model_layers, 5);
            assert.equal((await completion(server, { prompt: "Say it:", max_tokens: 24, grammar: exact("split in two") })).text, "split in two");
        } finally {
            await server.close();
        }
    });
});

describe("the prompt cache on Vulkan: slot states of offloaded layers saved to host memory and restored", { skip: vulkan.skip }, () => {
    it("a restored state gives, greedy and token by token, what the slot gives when it was never evicted", async () => {
        const model = "maple-tiny";
        // Past maple-tiny's 128-token window, shorter than the CPU test's 300: lavapipe evaluates ~15 prompt tokens a second.
        const length = 160;
        const uncached = await vulkanServer({ cacheRamMiB: 0 });
        let reference;
        try {
            reference = await returningConversation(uncached, model, 10, false, length);
            assert.equal(cached(reference), restoredLength(model, length), "the slot kept A's prompt");
        } finally {
            await uncached.close();
        }
        const server = await vulkanServer({ cacheRamMiB: 64 });
        try {
            const second = await returningConversation(server, model, 10, true, length);
            assert.equal(cached(second), restoredLength(model, length), "A's state was restored");
            assert.deepEqual(tokensOf(second), tokensOf(reference));
        } finally {
            await server.close();
        }
    });
});

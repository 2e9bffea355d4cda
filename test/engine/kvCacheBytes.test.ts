import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { kvCacheBytes } from "../../src/engine/kvCacheBytes.js";
import { loadLlamaEngine } from "../../src/engine/loadLlamaEngine.js";
import { readModelFileFacts } from "../../src/engine/modelFileFacts.js";
import type { Engine } from "../../src/engine/types.js";
import { resolveModel } from "../../src/models/resolveModel.js";
import { testModelsDir } from "../helpers/testServer.js";

/**
 * The engine reports one slot's KV bytes, from the GGUF's layers. maple-tiny: 4 layers of 2 KV
 * heads × (64 + 64) f16 elements (512 bytes a token each), the first three sliding-window
 * (window 128), the fourth global; qwen3-tiny: the same layers, all global.
 */
const bytesPerLayerToken = 2 * (64 + 64) * 2;

describe("KV bytes per slot", () => {
    let maple: Engine;
    let qwen: Engine;
    let maplePath: string;
    before(async () => {
        maplePath = (await resolveModel("synthetic:maple-tiny", { modelsDir: testModelsDir })).path;
        const load = async (path: string): Promise<Engine> => loadLlamaEngine({ modelPath: path, threads: 1, contextSize: 4096, slots: 1, batchSize: 512, gpu: "cpu" });
        maple = await load(maplePath);
        qwen = await load((await resolveModel("synthetic:qwen3-tiny", { modelsDir: testModelsDir })).path);
    });
    after(async () => {
        await maple?.dispose();
        await qwen?.dispose();
    });

    it("the full cache holds every layer's cells for every token of the slot", () => {
        assert.equal(maple.runtime.kvBytesPerSlotFull, 4 * bytesPerLayerToken * maple.runtime.contextSize);
        assert.equal(qwen.runtime.kvBytesPerSlotFull, 4 * bytesPerLayerToken * qwen.runtime.contextSize);
    });

    it("the windowed cache is well under it: the global layer's cells, and the sliding layers' window and a batch", () => {
        const context = maple.runtime.contextSize;
        // Window 128 + a batch of 512 + 1, padded to 256 cells.
        const windowCells = 768;
        assert.equal(maple.runtime.kvBytesPerSlotWindowed, bytesPerLayerToken * (context + 3 * windowCells));
        // The windowed cache is the default: what the engine allocates.
        assert.equal(maple.runtime.slidingWindowCache, "windowed");
        assert.equal(maple.runtime.kvBytesPerSlot, maple.runtime.kvBytesPerSlotWindowed);
        const ratio = maple.runtime.kvBytesPerSlotWindowed / maple.runtime.kvBytesPerSlotFull;
        assert.equal(ratio, (context + 3 * windowCells) / (4 * context));
        assert.ok(ratio < 0.4, `windowed / full = ${ratio}`);
        // No sliding-window layers: nothing to window.
        assert.equal(qwen.runtime.kvBytesPerSlotWindowed, qwen.runtime.kvBytesPerSlotFull);
        assert.equal(qwen.runtime.slidingWindowCache, "none");
    });

    it("at a long context the ratio tends to the global layers' share (1 of 4)", () => {
        const metadata = { block_count: 4, attention: { head_count: 4, head_count_kv: 2, key_length: 64, value_length: 64, sliding_window: 128,
            sliding_window_pattern: [true, true, true, false] } };
        const bytes = kvCacheBytes(metadata, 131_072, 512);
        assert.equal(bytes.globalBytesPerToken, bytesPerLayerToken);
        assert.equal(bytes.slidingBytesPerToken, 3 * bytesPerLayerToken);
        assert.ok(Math.abs(bytes.windowed / bytes.full - 0.25) < 0.005);
        // llama.cpp's period form of the pattern: with n = 4, layers 0–2 slide and layer 3 is global.
        assert.deepEqual(kvCacheBytes({ ...metadata, attention: { ...metadata.attention, sliding_window_pattern: 4 } }, 131_072, 512), bytes);
    });

    it("the memory a model is counted for before loading is its weights and the cache the engine then allocates", async () => {
        const layout = { contextSize: 4096, slots: 1, batchSize: 512, swaFullCache: false };
        const facts = await readModelFileFacts(maplePath, layout);
        assert.equal(facts.memoryBytes, facts.weightsBytes + maple.runtime.kvBytesPerSlot);
        assert.equal((await readModelFileFacts(maplePath, { ...layout, swaFullCache: true })).memoryBytes, facts.weightsBytes + maple.runtime.kvBytesPerSlotFull);
        // Unset, the context is fitted as the engine fits it: the training context (32768 on maple-tiny) when unbounded, less within a bound.
        const slots = 4;
        const unbounded = await readModelFileFacts(maplePath, { ...layout, contextSize: undefined, slots });
        const trainContext = bytesPerLayerToken * (32_768 + 3 * 768);
        assert.equal(unbounded.memoryBytes, facts.weightsBytes + slots * trainContext);
        const budget = slots * trainContext / 2;
        const bounded = await readModelFileFacts(maplePath, { ...layout, contextSize: undefined, slots, kvBudgetBytes: budget });
        // The largest multiple of 1024 tokens whose KV cells and 4 checkpoints (each the 3 sliding layers' 768 cells) fit.
        const contextSize = (bounded.memoryBytes - facts.weightsBytes) / slots / bytesPerLayerToken - 3 * 768;
        assert.equal(contextSize % 1024, 0, `context ${contextSize}`);
        const slotBytes = (size: number): number => bytesPerLayerToken * (size + 3 * 768 + 4 * 3 * 768);
        assert.ok(slots * slotBytes(contextSize) <= budget && slots * slotBytes(contextSize + 1024) > budget, `context ${contextSize}`);
    });
});

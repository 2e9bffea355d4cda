import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MemoryResponseStore } from "../../src/responses/memoryResponseStore.js";
import { responseStoreContract, stored } from "./responseStoreContract.js";

describe("MemoryResponseStore", () => {
    responseStoreContract(async (limits) => new MemoryResponseStore(limits));

    it("expires responses after the TTL", async () => {
        let now = 0;
        const store = new MemoryResponseStore({ maxCount: 10, maxBytes: 1 << 20, ttlMs: 1000 }, () => now);
        await store.put(stored("a"));
        now = 500;
        await store.put(stored("b"));
        now = 1000;
        assert.equal(await store.get("a"), undefined);
        assert.ok(await store.get("b") !== undefined);
        assert.equal(store.size, 1);
        now = 1500;
        assert.equal(await store.item("msg_b"), undefined);
    });

    it("is always available and has no other replica to cancel on", async () => {
        const store = new MemoryResponseStore({ maxCount: 10, maxBytes: 1 << 20, ttlMs: 1000 });
        assert.equal(store.state, "memory");
        store.requireAvailable();
        assert.equal(await store.cancelElsewhere(), undefined);
    });
});

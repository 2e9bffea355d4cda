import assert from "node:assert/strict";
import { it } from "node:test";
import type { ResponseStore, ResponseStoreLimits, StoredResponse } from "../../src/responses/responseStore.js";

export const stored = (id: string, itemId = `msg_${id}`, padding = ""): StoredResponse => ({
    id, response: { id, output: [{ id: itemId, type: "message", content: [{ type: "output_text", text: padding }] }] }, inputItems: [], conversation: []
});

/** What every response store does, the memory one and Redis alike: bounds by count and bytes, items by id, delete. */
export function responseStoreContract(open: (limits: ResponseStoreLimits) => Promise<ResponseStore>): void {
    it("keeps at most maxCount responses, dropping the oldest, and indexes their output items", async () => {
        const store = await open({ maxCount: 2, maxBytes: 1 << 20, ttlMs: 60_000 });
        await store.put(stored("a"));
        await store.put(stored("b"));
        await store.put(stored("c"));
        assert.equal(await store.get("a"), undefined);
        assert.deepEqual(await store.get("c"), stored("c"));
        assert.equal(await store.item("msg_a"), undefined, "a dropped response's items go with it");
        assert.equal((await store.item("msg_c"))?.["type"], "message");
    });

    it("keeps the sum of their sizes under maxBytes, and refuses one larger than the whole budget", async () => {
        const size = JSON.stringify(stored("a", "msg_a", "x".repeat(100))).length;
        const store = await open({ maxCount: 100, maxBytes: size * 2 + 10, ttlMs: 60_000 });
        await store.put(stored("a", "msg_a", "x".repeat(100)));
        await store.put(stored("b", "msg_b", "x".repeat(100)));
        await store.put(stored("c", "msg_c", "x".repeat(100)));
        assert.deepEqual(await Promise.all(["a", "b", "c"].map(async (id) => await store.get(id) !== undefined)), [false, true, true]);
        await store.put(stored("huge", "msg_huge", "x".repeat(1000)));
        assert.equal(await store.get("huge"), undefined);
        assert.ok(await store.get("b") !== undefined && await store.get("c") !== undefined, "a refused response evicts nothing");
    });

    it("replaces a response stored again, and deletes on request", async () => {
        const store = await open({ maxCount: 10, maxBytes: 1 << 20, ttlMs: 60_000 });
        await store.put(stored("a", "msg_a", "first"));
        await store.put(stored("a", "msg_a", "second"));
        assert.deepEqual(await store.get("a"), stored("a", "msg_a", "second"));
        assert.equal(await store.delete("a"), true);
        assert.equal(await store.delete("a"), false);
        assert.equal(await store.get("a"), undefined);
        assert.equal(await store.item("msg_a"), undefined);
    });

    it("stores nothing with maxCount 0", async () => {
        const store = await open({ maxCount: 0, maxBytes: 1 << 20, ttlMs: 1000 });
        await store.put(stored("a"));
        assert.equal(await store.get("a"), undefined);
    });
}

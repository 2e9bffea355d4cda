import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ResponseStore, type StoredResponse } from "../../src/responses/responseStore.js";

const stored = (id: string, itemId = `msg_${id}`, padding = ""): StoredResponse => ({
    id, response: { id, output: [{ id: itemId, type: "message", content: [{ type: "output_text", text: padding }] }] }, inputItems: [], conversation: []
});

describe("ResponseStore", () => {
    it("keeps at most maxCount responses, dropping the oldest, and indexes their output items", () => {
        const store = new ResponseStore({ maxCount: 2, maxBytes: 1 << 20, ttlMs: 60_000 });
        store.put(stored("a"));
        store.put(stored("b"));
        store.put(stored("c"));
        assert.equal(store.size, 2);
        assert.equal(store.get("a"), undefined);
        assert.equal(store.item("msg_a"), undefined, "a dropped response's items go with it");
        assert.equal(store.item("msg_c")?.["type"], "message");
    });

    it("keeps the sum of their sizes under maxBytes, and refuses one larger than the whole budget", () => {
        const size = JSON.stringify(stored("a", "msg_a", "x".repeat(100))).length;
        const store = new ResponseStore({ maxCount: 100, maxBytes: size * 2 + 10, ttlMs: 60_000 });
        store.put(stored("a", "msg_a", "x".repeat(100)));
        store.put(stored("b", "msg_b", "x".repeat(100)));
        store.put(stored("c", "msg_c", "x".repeat(100)));
        assert.deepEqual(["a", "b", "c"].map((id) => store.get(id) !== undefined), [false, true, true]);
        store.put(stored("huge", "msg_huge", "x".repeat(1000)));
        assert.equal(store.get("huge"), undefined);
        assert.equal(store.size, 2);
    });

    it("expires responses after the TTL, and deletes on request", () => {
        let now = 0;
        const store = new ResponseStore({ maxCount: 10, maxBytes: 1 << 20, ttlMs: 1000 }, () => now);
        store.put(stored("a"));
        now = 500;
        store.put(stored("b"));
        now = 1000;
        assert.equal(store.get("a"), undefined);
        assert.ok(store.get("b") !== undefined);
        assert.equal(store.delete("b"), true);
        assert.equal(store.delete("b"), false);
        assert.equal(store.item("msg_b"), undefined);
    });

    it("stores nothing with maxCount 0", () => {
        const store = new ResponseStore({ maxCount: 0, maxBytes: 1 << 20, ttlMs: 1000 });
        store.put(stored("a"));
        assert.equal(store.get("a"), undefined);
    });
});

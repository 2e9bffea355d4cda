import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LruCache } from "../src/lruCache.js";

describe("LruCache", () => {
    it("evicts the least recently used entry beyond its capacity; a read counts as a use", () => {
        const cache = new LruCache<string, number>(2);
        cache.set("a", 1);
        cache.set("b", 2);
        assert.equal(cache.get("a"), 1);
        cache.set("c", 3);
        assert.equal(cache.get("b"), undefined);
        assert.equal(cache.get("a"), 1);
        assert.equal(cache.get("c"), 3);
        assert.equal(cache.size, 2);
    });

    it("replacing a key's value neither grows it nor evicts another", () => {
        const cache = new LruCache<string, number>(2);
        cache.set("a", 1);
        cache.set("b", 2);
        cache.set("a", 10);
        assert.equal(cache.size, 2);
        assert.equal(cache.get("b"), 2);
        assert.equal(cache.get("a"), 10);
    });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { anthropicCacheKey, conversationCacheKey } from "../../src/scheduler/cacheKey.js";

describe("conversationCacheKey", () => {
    it("takes prompt_cache_key, else user, else the X-Session-Id header, each in its own namespace", () => {
        assert.equal(conversationCacheKey({ prompt_cache_key: "a", user: "b" }, { "x-session-id": "c" }), "prompt_cache_key:a");
        assert.equal(conversationCacheKey({ user: "b" }, { "x-session-id": "c" }), "user:b");
        assert.equal(conversationCacheKey({}, { "x-session-id": "c" }), "session:c");
        assert.equal(conversationCacheKey({ user: "" , prompt_cache_key: 7 }, {}), undefined);
        assert.notEqual(conversationCacheKey({ user: "x" }, {}), conversationCacheKey({}, { "x-session-id": "x" }));
    });

    it("hashes long keys to a bounded length", () => {
        const key = conversationCacheKey({ prompt_cache_key: "k".repeat(10_000) }, {})!;
        assert.ok(key.length < 100);
        assert.notEqual(key, conversationCacheKey({ prompt_cache_key: "k".repeat(9_999) }, {}));
    });
});

describe("anthropicCacheKey", () => {
    it("takes metadata.user_id as OpenAI's user, else the X-Session-Id header", () => {
        assert.equal(anthropicCacheKey({ metadata: { user_id: "u1" } }, { "x-session-id": "c" }), "user:u1");
        assert.equal(anthropicCacheKey({ metadata: { user_id: "u1" } }, {}), conversationCacheKey({ user: "u1" }, {}));
        assert.equal(anthropicCacheKey({ metadata: {} }, { "x-session-id": "c" }), "session:c");
        assert.equal(anthropicCacheKey({ user: "not-anthropic", metadata: "x" }, {}), undefined);
    });
});

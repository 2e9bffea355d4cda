import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { conversationKey } from "../../src/wire/conversationKey.js";

describe("conversationKey", () => {
    it("takes prompt_cache_key, else user, else the X-Session-Id header, each in its own namespace", () => {
        assert.equal(conversationKey({ promptCacheKey: "a", user: "b" }, { "x-session-id": "c" }), "prompt_cache_key:a");
        assert.equal(conversationKey({ user: "b" }, { "x-session-id": "c" }), "user:b");
        assert.equal(conversationKey({}, { "x-session-id": "c" }), "session:c");
        assert.equal(conversationKey({}, { "x-session-id": ["first", "second"] }), "session:first");
        assert.equal(conversationKey({ user: "", promptCacheKey: 7 }, {}), undefined);
        assert.equal(conversationKey({ user: { id: "x" } }, {}), undefined);
        assert.notEqual(conversationKey({ user: "x" }, {}), conversationKey({}, { "x-session-id": "x" }));
    });

    it("hashes long keys to a bounded length", () => {
        const key = conversationKey({ promptCacheKey: "k".repeat(10_000) }, {})!;
        assert.ok(key.length < 100);
        assert.notEqual(key, conversationKey({ promptCacheKey: "k".repeat(9_999) }, {}));
    });
});

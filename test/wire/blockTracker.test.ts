import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BlockTracker, type BlockStep } from "../../src/wire/blockTracker.js";
import type { GenerationPart } from "../../src/core/index.js";

const finish: GenerationPart = { type: "finish", reason: "stop", matchedStop: null, toolCalls: 1, usage: { promptTokens: 1, cachedTokens: 0, completionTokens: 1, reasoningTokens: 0 } };
const logprobs: GenerationPart = { type: "logprobs", token: { token: 1, text: "a", bytes: [97], logprob: 0, top: [] } };

function steps(parts: GenerationPart[]): BlockStep[] {
    const tracker = new BlockTracker();
    return parts.flatMap((part) => tracker.step(part));
}

describe("BlockTracker", () => {
    it("opens a block at its first delta, ends it at the next kind, a tool call or finish, and numbers blocks with the calls", () => {
        assert.deepEqual(steps([
            { type: "reasoning-delta", text: "th" }, logprobs, { type: "reasoning-delta", text: "ink" },
            { type: "text-delta", text: "Hi" }, { type: "tool-call", index: 0, name: "f", arguments: "{}" },
            { type: "text-delta", text: "after" }, finish
        ]), [
            { type: "start", kind: "reasoning", index: 0 }, { type: "delta", kind: "reasoning", index: 0, text: "th" },
            { type: "delta", kind: "reasoning", index: 0, text: "ink" }, { type: "end", kind: "reasoning", index: 0, text: "think" },
            { type: "start", kind: "text", index: 1 }, { type: "delta", kind: "text", index: 1, text: "Hi" }, { type: "end", kind: "text", index: 1, text: "Hi" },
            { type: "tool-call", index: 2, name: "f", arguments: "{}" },
            { type: "start", kind: "text", index: 3 }, { type: "delta", kind: "text", index: 3, text: "after" }, { type: "end", kind: "text", index: 3, text: "after" }
        ]);
    });

    it("opens nothing for an empty delta, and close() ends the open block once (a failed or cancelled stream)", () => {
        const tracker = new BlockTracker();
        assert.deepEqual(tracker.step({ type: "text-delta", text: "" }), []);
        assert.deepEqual(tracker.close(), []);
        tracker.step({ type: "text-delta", text: "x" });
        assert.deepEqual(tracker.close(), [{ type: "end", kind: "text", index: 0, text: "x" }]);
        assert.deepEqual(tracker.close(), []);
        assert.deepEqual(tracker.step(finish), []);
    });
});

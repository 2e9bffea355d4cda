import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ContextDoesNotFitError, fitContextSize } from "../../src/engine/contextFit.js";

/** maple-preview's figures: ~12 KiB a token with the windowed cache, 48 KiB with the full one; 4 slots. */
const windowed = (size: number): number => size * 12 * 1024 + 40 * 2 ** 20;
const full = (size: number): number => size * 48 * 1024;
const gib = 2 ** 30;

describe("the context each slot gets", () => {
    it("the training context when the slots' KV caches fit", () => {
        const fit = fitContextSize({ requested: undefined, trainContextSize: 131_072, slots: 4, budgetBytes: 8 * gib, kvBytesPerSlot: windowed });
        assert.equal(fit.contextSize, 131_072);
        assert.match(fit.reason, /training context/);
    });

    it("else the largest multiple of 1024 that fits, and says why", () => {
        const fit = fitContextSize({ requested: undefined, trainContextSize: 131_072, slots: 4, budgetBytes: 8 * gib, kvBytesPerSlot: full });
        assert.equal(fit.contextSize % 1024, 0);
        assert.ok(4 * full(fit.contextSize) <= 8 * gib && 4 * full(fit.contextSize + 1024) > 8 * gib, String(fit.contextSize));
        assert.match(fit.reason, /largest that fits/);
    });

    it("an explicit size is obeyed (capped at the training context), or refused with the figures when it cannot fit", () => {
        assert.equal(fitContextSize({ requested: 32_768, trainContextSize: 131_072, slots: 4, budgetBytes: 8 * gib, kvBytesPerSlot: full }).contextSize, 32_768);
        assert.equal(fitContextSize({ requested: 200_000, trainContextSize: 131_072, slots: 1, budgetBytes: undefined, kvBytesPerSlot: full }).contextSize, 131_072);
        assert.throws(() => fitContextSize({ requested: 131_072, trainContextSize: 131_072, slots: 4, budgetBytes: 8 * gib, kvBytesPerSlot: full }),
            (error: unknown) => error instanceof ContextDoesNotFitError && /--context-size 131072 needs 24\.00 GiB .* 8\.00 GiB/.test(error.message));
    });

    it("refuses when not even a small context fits", () => {
        assert.throws(() => fitContextSize({ requested: undefined, trainContextSize: 131_072, slots: 4, budgetBytes: 10 * 2 ** 20, kvBytesPerSlot: full }), ContextDoesNotFitError);
    });
});

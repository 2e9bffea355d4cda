import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { StateCosts } from "../../src/engine/stateCosts.js";

describe("StateCosts", () => {
    it("answers the fallback until both a save and a batch were measured", () => {
        const costs = new StateCosts();
        assert.equal(costs.saveToPrefillRatio(0.1), 0.1);
        costs.noteSave(1000, 50);
        assert.equal(costs.saveToPrefillRatio(0.1), 0.1);
        costs.noteBatch(100, 1000);
        // 0.05 ms per saved token against 10 ms per evaluated one.
        assert.equal(costs.saveToPrefillRatio(0.1), 0.005);
    });

    it("judges saves and batches by their medians: neither the fastest nor the slowest sample", () => {
        const costs = new StateCosts();
        costs.noteSave(1000, 900);
        costs.noteSave(1000, 50);
        costs.noteSave(1000, 50);
        // A cold preamble's large batch, a short tail's, a 16-token one beside three generating slots.
        for (const [tokens, ms] of [[2564, 18_200], [140, 1652], [20, 300]] as const) costs.noteBatch(tokens, ms);
        assert.equal(costs.saveToPrefillRatio(0.1).toFixed(5), (0.05 / (1652 / 140)).toFixed(5));
        // Most saves now slow: their median, not the fastest one, is what a save costs.
        costs.noteSave(1000, 900);
        costs.noteSave(1000, 900);
        assert.equal(costs.saveToPrefillRatio(0.1).toFixed(5), (0.9 / (1652 / 140)).toFixed(5));
    });

    it("forgets samples older than the last sixteen", () => {
        const costs = new StateCosts();
        costs.noteSave(1000, 100);
        for (let index = 0; index < 16; index += 1) costs.noteBatch(100, 500);
        assert.equal(costs.saveToPrefillRatio(0.1), 0.02);
        for (let index = 0; index < 16; index += 1) costs.noteBatch(100, 1000);
        // The 5 ms per token of the older batches is gone: 0.1 ms against 10 ms.
        assert.equal(costs.saveToPrefillRatio(0.1), 0.01);
    });

    it("ignores samples too small to show a per-token cost (a generation step's batch, one token a slot)", () => {
        const costs = new StateCosts();
        costs.noteSave(3, 100);
        costs.noteBatch(4, 126);
        assert.equal(costs.saveToPrefillRatio(0.3), 0.3);
        costs.noteSave(1000, 100);
        assert.equal(costs.saveToPrefillRatio(0.3), 0.3);
    });
});

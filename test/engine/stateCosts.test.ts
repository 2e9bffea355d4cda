import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { StateCosts } from "../../src/engine/stateCosts.js";

/** A StateCosts on a clock the test moves. */
function measured(): { costs: StateCosts; advance: (ms: number) => void } {
    let now = 0;
    return { costs: new StateCosts(() => now), advance: (ms) => { now += ms; } };
}

describe("StateCosts", () => {
    it("answers the fallback until both a save and a prompt evaluation were measured", () => {
        const { costs, advance } = measured();
        assert.equal(costs.saveToPrefillRatio(0.1), 0.1);
        costs.noteSave(1000, 50);
        assert.equal(costs.saveToPrefillRatio(0.1), 0.1);
        const ended = costs.startPrefill(100);
        advance(1000);
        ended();
        // 0.05 ms per saved token against 10 ms per evaluated one.
        assert.equal(costs.saveToPrefillRatio(0.1), 0.005);
    });

    it("takes a prompt's lowest recent sample (one that waited for a batch does not count as slow) and a save's median", () => {
        const { costs, advance } = measured();
        costs.noteSave(1000, 900);
        costs.noteSave(1000, 50);
        costs.noteSave(1000, 50);
        for (const ms of [5000, 1000, 3000]) {
            const ended = costs.startPrefill(100);
            advance(ms);
            ended();
        }
        assert.equal(costs.saveToPrefillRatio(0.1), 0.005);
        // Most saves now slow: their median, not the fastest one, is what a save costs.
        costs.noteSave(1000, 900);
        costs.noteSave(1000, 900);
        assert.equal(costs.saveToPrefillRatio(0.1), 0.09);
    });

    it("forgets samples older than the last sixteen", () => {
        const { costs, advance } = measured();
        costs.noteSave(1000, 100);
        const fast = costs.startPrefill(100);
        advance(500);
        fast();
        for (let index = 0; index < 16; index += 1) {
            const ended = costs.startPrefill(100);
            advance(1000);
            ended();
        }
        // The 5 ms per token of the oldest prompt is gone: 0.1 ms against 10 ms.
        assert.equal(costs.saveToPrefillRatio(0.1), 0.01);
    });

    it("charges prompts evaluated together per token of all of them", () => {
        const { costs, advance } = measured();
        costs.noteSave(300, 3);
        const first = costs.startPrefill(100);
        const others = [costs.startPrefill(100), costs.startPrefill(100)];
        advance(3000);
        [first, ...others].forEach((ended) => ended());
        // 3 s for 300 tokens: 10 ms each, not 30.
        assert.equal(costs.saveToPrefillRatio(0.1), 0.001);
    });

    it("ignores samples too small to show a per-token cost", () => {
        const { costs, advance } = measured();
        costs.noteSave(3, 100);
        const ended = costs.startPrefill(1);
        advance(100);
        ended();
        assert.equal(costs.saveToPrefillRatio(0.3), 0.3);
    });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ReturnOdds } from "../../src/engine/slotCache/returnOdds.js";

/** A state of `length` tokens: a shared `preamble` of zeros, then the tokens of conversation `id`. */
function state(id: number, length: number, preamble = 0): number[] {
    return Array.from({ length }, (_, index) => (index < preamble ? 0 : id * 10_000 + index));
}

describe("ReturnOdds", () => {
    it("starts at even odds", () => {
        assert.equal(new ReturnOdds(16, 8).share, 0.5);
    });

    it("rises as departed states come back: conversations on fewer slots", () => {
        const odds = new ReturnOdds(16, 4);
        for (let id = 0; id < 8; id += 1) odds.left(state(id, 100), 0);
        // Each conversation's next turn extends what it held.
        for (let id = 0; id < 8; id += 1) odds.arrived([...state(id, 100), 1, 2, 3]);
        assert.equal(odds.share, 9 / 10);
    });

    it("falls as departures settle without coming back: agents' finished sessions sharing a preamble", () => {
        const odds = new ReturnOdds(16, 4);
        for (let id = 0; id < 12; id += 1) {
            // A new session of the same kind shares the preamble (saved, so covered) and nothing after it.
            odds.arrived(state(id + 100, 150, 100));
            odds.left(state(id, 150, 100), 100);
        }
        // 8 departures are 4 or more behind the last; the 4 newest are not settled yet.
        assert.equal(odds.share, 1 / 10);
    });

    it("does not count a prompt sharing fewer new tokens than a restore would spare", () => {
        const odds = new ReturnOdds(16, 1);
        odds.left(state(1, 140, 100), 100);
        odds.left(state(2, 140, 100), 100);
        // 15 tokens past what the saved entries held.
        odds.arrived(state(1, 115, 100));
        assert.equal(odds.share, 1 / 3);
        odds.arrived(state(1, 116, 100));
        assert.equal(odds.share, 2 / 3);
    });

    it("ignores a slot that leaves too little unsaved to return to", () => {
        const odds = new ReturnOdds(16, 1);
        odds.left(state(1, 110, 100), 100);
        odds.left(state(2, 110, 100), 100);
        assert.equal(odds.share, 0.5);
    });

    it("counts a late return, and forgets departures beyond the last it keeps", () => {
        const odds = new ReturnOdds(16, 1, 3);
        for (let id = 0; id < 4; id += 1) odds.left(state(id, 100), 0);
        // Departure 0 is forgotten; 1 and 2 are gone, 3 not settled.
        assert.equal(odds.share, 1 / 4);
        odds.arrived(state(1, 100));
        assert.equal(odds.share, 2 / 4);
        odds.arrived(state(0, 100));
        assert.equal(odds.share, 2 / 4);
    });
});

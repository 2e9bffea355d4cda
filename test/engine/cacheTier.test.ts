import assert from "node:assert/strict";
import { tmpdir } from "node:os";
import { describe, it } from "node:test";
import { CacheTier, nextUse, type CacheEntry } from "../../src/engine/promptCache/cacheTier.js";

/** Conversation c's prompt at round r: its own 100 tokens, then 10 more per round. */
const prompt = (conversation: number, round: number): number[] =>
    Array.from({ length: 100 + 10 * round }, (_, index) => conversation * 10_000 + index);

let ids = 0;
const entry = (tokens: number[]): CacheEntry => ({
    id: `e${(ids += 1)}`, tier: "ram", tokens, bytes: 100, key: undefined, file: `${tmpdir()}/maple-cache-tier-test-${ids}`,
    companions: [], verified: true, lastUsed: nextUse(), pins: 0
});

/**
 * Each round, every conversation comes back in turn: served when an entry holds its previous
 * prompt (a restore), a miss otherwise; then its state is saved, as a slot's is when reused.
 * Returns the hits per round.
 */
function playRounds(tier: CacheTier, conversations: number, rounds: number): number[] {
    const hits: number[] = [];
    for (let round = 0; round < rounds; round += 1) {
        let served = 0;
        for (let conversation = 0; conversation < conversations; conversation += 1) {
            const tokens = prompt(conversation, round);
            const match = tier.longestMatch(tokens, tokens.length - 1, undefined);
            if (match !== undefined && match.shared >= 100) {
                served += 1;
                match.entry.lastUsed = nextUse();
                match.entry.proven = true;
            } else {
                tier.noteMiss(tokens, tokens.length - 1);
            }
            tier.add(entry(tokens));
        }
        hits.push(served);
    }
    return hits;
}

describe("the prompt cache tier's eviction", () => {
    it("keeps serving part of a set of conversations larger than the tier, where LRU would serve none", () => {
        // Room for 4 entries, 10 conversations taking turns.
        const tier = new CacheTier("ram", tmpdir(), 400, () => undefined);
        const hits = playRounds(tier, 10, 6);
        assert.equal(hits[0], 0);
        assert.ok(tier.thrashing);
        // After the rounds that detect the thrash, a stable set of conversations is served.
        for (const served of hits.slice(3)) assert.ok(served >= 3, `hits per round ${JSON.stringify(hits)}`);
    });

    it("evicts the least recently used while the misses are new conversations", () => {
        const tier = new CacheTier("ram", tmpdir(), 400, () => undefined);
        playRounds(tier, 10, 1);
        assert.ok(!tier.thrashing);
        // The last four saved are held; the first ones were evicted.
        assert.ok(tier.longestMatch(prompt(9, 1), 109, undefined) !== undefined);
        assert.ok(tier.longestMatch(prompt(6, 1), 109, undefined) !== undefined);
        assert.equal(tier.longestMatch(prompt(0, 1), 109, undefined), undefined);
    });
});

/** A free slot as the slot choice sees it. */
export interface SlotCandidate {
    slot: number;
    /** Prompt tokens it would not evaluate: its own prefix, or a saved state restored into it. */
    reused: number;
    /** What overwriting it loses, in tokens' worth (see reuseCost in cacheRules.ts). */
    lost: number;
    /** It last served the request's conversation key. */
    ownKey: boolean;
}

/**
 * The slot that serves the prompt best: the most tokens reused minus what overwriting it loses;
 * on a tie, the slot the same conversation used last, then the least recently used one (as
 * llama-server does). `candidates` come least recently used first; there is at least one.
 * So concurrent arrivals take empty or already-saved slots before they push out a prefix another
 * request is about to want.
 */
export function mostReusedSlotStrategy({ candidates }: { candidates: readonly SlotCandidate[] }): number {
    let best: { slot: number; value: number; ownKey: boolean } | undefined;
    for (const candidate of candidates) {
        const value = candidate.reused - candidate.lost;
        if (best === undefined || value > best.value || (value === best.value && candidate.ownKey && !best.ownKey)) {
            best = { slot: candidate.slot, value, ownKey: candidate.ownKey };
        }
    }
    if (best === undefined) throw new RangeError("no free slot to choose from");
    return best.slot;
}

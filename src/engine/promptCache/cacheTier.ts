import { rm } from "node:fs/promises";

export type TierName = "ram" | "disk";

/** One saved KV state: the tokens it holds and the file llama.cpp wrote it to. */
export interface CacheEntry {
    readonly id: string;
    readonly tier: TierName;
    readonly tokens: readonly number[];
    readonly bytes: number;
    /** The conversation key (prompt_cache_key, user or X-Session-Id) of the request that left this state. */
    readonly key: string | undefined;
    readonly file: string;
    /** Files to delete with the entry besides `file` (the disk tier's manifest). */
    readonly companions: readonly string[];
    /** Whether its bytes are known good: written by this process, or checked against its manifest's checksum. */
    verified: boolean;
    /** The disk tier's manifest checksum, checked before an unverified entry is loaded. */
    readonly checksum?: number;
    lastUsed: number;
    /** Restores in progress: an entry being loaded is never evicted. */
    pins: number;
    /** The state where a prompt's shared preamble ends (system prompt and tools), saved for later sessions; counted apart in /metrics. */
    readonly preamble?: boolean;
    /** Restored at least once, or extends an entry that was: kept over unproven entries while the tier thrashes. */
    proven?: boolean;
}

export interface PrefixMatch {
    entry: CacheEntry;
    /** Leading prompt tokens the entry holds. */
    shared: number;
}

let clock = 0;
/** A monotonic use counter: LRU order without clock reads. */
export function nextUse(): number {
    clock += 1;
    return clock;
}

export function sharedPrefixLength(cached: ArrayLike<number>, prompt: ArrayLike<number>, limit: number): number {
    const end = Math.min(cached.length, limit);
    let shared = 0;
    while (shared < end && cached[shared] === prompt[shared]) shared += 1;
    return shared;
}

/**
 * Saved states within a byte bound. Every entry of one model costs about the same bytes per token,
 * so "tokens saved per byte" ranks them like recency does once their reuse is equal: the least
 * recently used is evicted first, except while the tier thrashes.
 *
 * Thrashing: more conversations take turns than the tier holds (32 on a tier that holds 13), so
 * LRU evicts each one just before it comes back, and nothing is ever restored (measured: 0
 * restores, 5% cached). The tier remembers the tokens of the entries it evicted lately; when most
 * recent misses are prompts one of them would have served, it evicts the newest entry never
 * restored instead (the incoming one, in effect), so a stable set of conversations keeps being
 * served. When the misses are new conversations again, LRU resumes.
 */
export class CacheTier {
    private readonly entries = new Map<string, CacheEntry>();
    private heldBytes = 0;
    /** The tokens of the entries evicted lately, newest last. */
    private ghosts: (readonly number[])[] = [];
    /** Of the recent misses, the share an evicted entry would have served (exponential average). */
    private thrash = 0;

    /**
     * `slidingWindow` (the model's, 0 when it has none): llama.cpp saves a sliding-window layer's
     * cells only within the window of the sequence's last position (llama_kv_cache::state_write
     * skips SWA-masked cells: for an entry of L tokens, the positions from L − window on). Cut
     * back to `shared` tokens, the next position needs the window before it (from shared −
     * window + 1 on), so such an entry serves a prompt exactly only when nothing was left out
     * (L ≤ window) or the cut drops at most one token (shared ≥ L − 1).
     */
    constructor(readonly name: TierName, readonly dir: string, readonly limitBytes: number, private readonly onEvict: (entry: CacheEntry) => void,
        private readonly slidingWindow = 0) {}

    get bytes(): number {
        return this.heldBytes;
    }

    get size(): number {
        return this.entries.size;
    }

    has(entry: CacheEntry): boolean {
        return this.entries.get(entry.id) === entry;
    }

    /**
     * Adds an entry, then evicts least recently used unpinned entries until the tier is within its
     * bound, and drops entries the new one extends (it reuses everything they would, for a few
     * more bytes). An entry larger than the whole bound is not kept. Returns whether it was kept.
     * `loopStart`: the new entry is a tool loop's turn (see droppable).
     */
    add(entry: CacheEntry, loopStart?: number): boolean {
        for (const other of [...this.entries.values()]) {
            if (sharedPrefixLength(other.tokens, entry.tokens, other.tokens.length) < other.tokens.length) continue;
            // Extending a restored entry is the same conversation going on: it inherits the proof.
            if (other.proven === true) entry.proven = true;
            if (this.droppable(other, entry.key, loopStart)) void this.delete(other, false);
        }
        this.entries.set(entry.id, entry);
        this.heldBytes += entry.bytes;
        this.evictToFit();
        return this.has(entry);
    }

    /**
     * Deletes, before a state of `tokens` is written, the entries it will supersede, and resolves
     * once their files are gone: the write then reuses the memory they held. Memory a VM freed a
     * while ago may have been handed back to its host, and a first write into it costs ~3.5 ms per
     * MB (a save of 80 MB 200–350 ms against 30–45 ms into memory just freed; see
     * bench/NOTES.md). Returns whether one of them was proven, which the new entry inherits.
     */
    async dropSuperseded(tokens: readonly number[], key: string | undefined, loopStart?: number): Promise<boolean> {
        const superseded = [...this.entries.values()].filter((other) =>
            this.droppable(other, key, loopStart) && sharedPrefixLength(other.tokens, tokens, other.tokens.length) === other.tokens.length);
        await Promise.all(superseded.map((other) => this.delete(other, false)));
        return superseded.some((other) => other.proven === true);
    }

    /**
     * Whether an entry that a new one (of conversation `key`) extends may be dropped: never while
     * it is being restored. Without a sliding window the new one serves every prompt the old one
     * did. With one, it does not (a prompt leaving it between the two ends, an edited last
     * message, is served from the preamble's entry or the slot's checkpoints instead), but the
     * same conversation's turn state is dropped all the same, as llama-server drops every cached
     * prompt a new one contains: on a VM that hands freed memory back to its host, a save into
     * memory freed a while ago took 120–390 ms for maple-preview's 26 MB states against ~22 ms
     * into memory just freed, under the context lock that stalls every slot. Preambles' entries
     * and other conversations' stay, and so does, when the new entry is a tool loop's turn, the
     * conversation's entry at the loop's start (`loopStart` tokens or fewer): the user's next
     * message, which renders the loop without its reasoning, leaves the prompt there.
     */
    private droppable(other: CacheEntry, key: string | undefined, loopStart: number | undefined): boolean {
        if (other.pins > 0) return false;
        if (this.slidingWindow === 0) return true;
        return other.preamble !== true && other.key === key && !(loopStart !== undefined && other.tokens.length <= loopStart);
    }

    /** The entry sharing the longest prefix with `prompt` (at most `limit` tokens); on a tie, the request's own conversation's, then the most recent. */
    longestMatch(prompt: readonly number[], limit: number, key: string | undefined): PrefixMatch | undefined {
        let best: PrefixMatch | undefined;
        for (const entry of this.entries.values()) {
            const shared = sharedPrefixLength(entry.tokens, prompt, limit);
            if (shared === 0 || !this.servesExactly(entry, shared)) continue;
            if (best === undefined || shared > best.shared || (shared === best.shared && rank(entry, key) > rank(best.entry, key))) best = { entry, shared };
        }
        return best;
    }

    /**
     * The most of the prompt's first `limit` tokens an entry holds, whether or not it serves them
     * (a sliding-window model's entry serves a prompt only when that is exact): where the prompt
     * parts from every saved state.
     */
    longestShared(prompt: readonly number[], limit: number): number {
        let longest = 0;
        for (const entry of this.entries.values()) longest = Math.max(longest, sharedPrefixLength(entry.tokens, prompt, limit));
        return longest;
    }

    /** Whether the entry, cut back to `shared` tokens, holds every KV cell the next position attends to (see the constructor). */
    private servesExactly(entry: CacheEntry, shared: number): boolean {
        return this.slidingWindow === 0 || entry.tokens.length <= this.slidingWindow || shared >= entry.tokens.length - 1;
    }

    /**
     * Records a prompt the tier did not serve: whether an entry evicted lately would have (it
     * shares at least half of that entry's tokens) feeds the thrash estimate.
     */
    noteMiss(prompt: readonly number[], limit: number): void {
        const evictedTooSoon = this.ghosts.some((tokens) => sharedPrefixLength(tokens, prompt, limit) >= Math.max(ghostMinimumShared, tokens.length / 2));
        this.thrash += thrashSmoothing * ((evictedTooSoon ? 1 : 0) - this.thrash);
    }

    get thrashing(): boolean {
        return this.thrash > 0.5;
    }

    /** Removes an entry and deletes its files (a failed or foreign entry; or an eviction when `evicted`). */
    delete(entry: CacheEntry, evicted: boolean): Promise<void> {
        if (!this.has(entry)) return Promise.resolve();
        this.entries.delete(entry.id);
        this.heldBytes -= entry.bytes;
        if (evicted) {
            this.onEvict(entry);
            this.ghosts.push(entry.tokens);
            if (this.ghosts.length > maximumGhosts) this.ghosts.shift();
        }
        return removeFiles([entry.file, ...entry.companions]);
    }

    /** Forgets every entry; their files stay (the disk tier's survive a restart). */
    forget(): void {
        this.entries.clear();
        this.heldBytes = 0;
    }

    private evictToFit(): void {
        while (this.heldBytes > this.limitBytes) {
            let oldest: CacheEntry | undefined;
            let newestUnproven: CacheEntry | undefined;
            for (const entry of this.entries.values()) {
                if (entry.pins > 0) continue;
                if (oldest === undefined || entry.lastUsed < oldest.lastUsed) oldest = entry;
                if (entry.proven !== true && (newestUnproven === undefined || entry.lastUsed > newestUnproven.lastUsed)) newestUnproven = entry;
            }
            const victim = this.thrashing ? newestUnproven ?? oldest : oldest;
            if (victim === undefined) return;
            void this.delete(victim, true);
        }
    }
}

/** Evicted entries remembered for the thrash estimate (their token lists only). */
const maximumGhosts = 64;
/** A prompt sharing fewer tokens with an evicted entry was not that entry's conversation. */
const ghostMinimumShared = 32;
/** Weight of each miss in the thrash estimate: about the last eight misses count. */
const thrashSmoothing = 0.125;

function rank(entry: CacheEntry, key: string | undefined): number {
    return (key !== undefined && entry.key === key ? Number.MAX_SAFE_INTEGER / 2 : 0) + entry.lastUsed;
}

async function removeFiles(files: readonly string[]): Promise<void> {
    await Promise.all(files.map((file) => rm(file, { force: true }).catch(() => undefined)));
}

import { EngineOverloadedError, RequestAbortedError } from "../errors.js";

export interface SchedulerOptions {
    /** Slots that generate at once (llama.cpp sequences of one context). */
    slots: number;
    /** Requests that may wait for a slot; one more gets 503 engine_overloaded. */
    maxQueueDepth: number;
    /** How long a request may wait for a slot before 503 engine_overloaded. */
    queueTimeoutMs: number;
    /**
     * How many leading prompt tokens a slot already holds, to send a request to the free slot
     * with the longest shared prefix (the prefix cache). Without it, the lowest free slot wins.
     */
    cachedPrefixLength?: (slot: number, promptTokens: readonly number[]) => number;
    /**
     * How many leading prompt tokens the best saved state (the prompt cache beyond the slots)
     * holds: any slot can restore it, so a slot's own prefix only counts when it is longer.
     */
    savedPrefixLength?: (promptTokens: readonly number[], cacheKey: string | undefined) => number;
    /**
     * What reusing the slot for this prompt loses, in tokens' worth: the tokens it holds beyond
     * the shared prefix that no saved state holds (weighted by what saving them costs). The slot
     * cheapest to lose is taken, so concurrent arrivals do not evict each other's prefixes.
     */
    reuseCost?: (slot: number, promptTokens: readonly number[]) => number;
    /** The conversation key of the last request the slot served: a request with the same key prefers it. */
    slotCacheKey?: (slot: number) => string | undefined;
}

export interface SlotLease extends Disposable {
    readonly slot: number;
    /** Milliseconds spent waiting in the queue. */
    readonly waitedMs: number;
    release(): void;
}

interface Waiter {
    promptTokens: readonly number[];
    cacheKey: string | undefined;
    /** Slots wanted at once (n > 1 choices). */
    count: number;
    enqueuedAt: number;
    grant(slots: number[]): void;
}

/**
 * Hands out generation slots: a free slot at once, else a place in a bounded FIFO queue with a
 * timeout. A waiter whose client goes away leaves the queue; a released slot goes to the oldest
 * waiter.
 */
export class Scheduler {
    private readonly freeSlots: number[];
    private readonly waiters: Waiter[] = [];
    /** When each slot was last released: among equal prefixes the least recently used slot is reused (as llama-server does). */
    private readonly lastReleased: number[];
    private releases = 0;

    constructor(private readonly options: SchedulerOptions) {
        this.freeSlots = Array.from({ length: options.slots }, (_, slot) => slot);
        this.lastReleased = Array.from({ length: options.slots }, () => 0);
    }

    /** Requests waiting for a slot. */
    get queueDepth(): number {
        return this.waiters.length;
    }

    /** Slots generating now. */
    get active(): number {
        return this.options.slots - this.freeSlots.length;
    }

    get slots(): number {
        return this.options.slots;
    }

    /** The slots held by requests now, in slot order. */
    get leasedSlots(): number[] {
        return Array.from({ length: this.options.slots }, (_, slot) => slot).filter((slot) => !this.freeSlots.includes(slot));
    }

    /**
     * Waits for a slot. Rejects with EngineOverloadedError when the queue is full or the wait
     * times out, and with RequestAbortedError when `signal` aborts first.
     */
    async acquire(promptTokens: readonly number[], signal: AbortSignal, cacheKey?: string): Promise<SlotLease> {
        return (await this.acquireMany(1, promptTokens, signal, cacheKey))[0]!;
    }

    /**
     * Waits for `count` slots at once (n > 1 choices share one prompt), 1 ≤ count ≤ `slots`; the
     * first lease is the slot holding the longest prefix of the prompt. The queue stays FIFO: a
     * request for several slots is not overtaken by later ones while it waits. Rejects as `acquire`.
     * `cacheKey` names the conversation (prompt_cache_key, user, X-Session-Id): a strong hint
     * for the slot that served it last.
     */
    acquireMany(count: number, promptTokens: readonly number[], signal: AbortSignal, cacheKey?: string): Promise<SlotLease[]> {
        if (!Number.isInteger(count) || count < 1 || count > this.options.slots) {
            return Promise.reject(new RangeError(`cannot hold ${count} of ${this.options.slots} slots`));
        }
        if (signal.aborted) return Promise.reject(new RequestAbortedError());
        const enqueuedAt = performance.now();
        if (this.waiters.length === 0 && this.freeSlots.length >= count) {
            return Promise.resolve(this.takeFreeSlots(count, promptTokens, cacheKey).map((slot) => this.lease(slot, enqueuedAt)));
        }
        if (this.waiters.length >= this.options.maxQueueDepth) {
            return Promise.reject(EngineOverloadedError.queueFull(this.waiters.length));
        }
        return new Promise<SlotLease[]>((resolve, reject) => {
            const leave = (): void => {
                clearTimeout(timer);
                signal.removeEventListener("abort", onAbort);
                const index = this.waiters.indexOf(waiter);
                if (index !== -1) this.waiters.splice(index, 1);
            };
            const onAbort = (): void => {
                leave();
                this.grantWaiters();
                reject(new RequestAbortedError());
            };
            const timer = setTimeout(() => {
                leave();
                this.grantWaiters();
                reject(EngineOverloadedError.queueTimeout(this.options.queueTimeoutMs));
            }, this.options.queueTimeoutMs);
            const waiter: Waiter = {
                promptTokens,
                cacheKey,
                count,
                enqueuedAt,
                grant: (slots) => {
                    leave();
                    resolve(slots.map((slot) => this.lease(slot, enqueuedAt)));
                }
            };
            signal.addEventListener("abort", onAbort, { once: true });
            this.waiters.push(waiter);
        });
    }

    /** Serves waiters in order while the first one's slots are free (one that wants several may hold up the rest). */
    private grantWaiters(): void {
        for (let next = this.waiters[0]; next !== undefined && next.count <= this.freeSlots.length; next = this.waiters[0]) {
            next.grant(this.takeFreeSlots(next.count, next.promptTokens, next.cacheKey));
        }
    }

    /** The best free slot for the prompt first (see takeFreeSlot), then the cheapest others to lose. */
    private takeFreeSlots(count: number, promptTokens: readonly number[], cacheKey: string | undefined): number[] {
        const slots = [this.takeFreeSlot(promptTokens, cacheKey)];
        // The others get the first one's state copied in: nothing of the prompt is reused from them.
        while (slots.length < count) slots.push(this.takeFreeSlot([], undefined));
        return slots;
    }

    /**
     * The free slot that serves the prompt best: the most tokens reused (its own prefix, or a saved
     * state restored into it) minus what overwriting it loses; on a tie, the slot the same
     * conversation used last, then the least recently used one (as llama-server does).
     */
    private takeFreeSlot(promptTokens: readonly number[], cacheKey: string | undefined): number {
        const saved = promptTokens.length === 0 ? 0 : this.options.savedPrefixLength?.(promptTokens, cacheKey) ?? 0;
        let best: { index: number; value: number; ownKey: boolean; released: number } | undefined;
        this.freeSlots.forEach((slot, index) => {
            const prefix = this.options.cachedPrefixLength?.(slot, promptTokens) ?? 0;
            const value = Math.max(prefix, saved) - (this.options.reuseCost?.(slot, promptTokens) ?? 0);
            const ownKey = cacheKey !== undefined && this.options.slotCacheKey?.(slot) === cacheKey;
            const released = this.lastReleased[slot] ?? 0;
            if (best === undefined || value > best.value
                || (value === best.value && (ownKey > best.ownKey || (ownKey === best.ownKey && released < best.released)))) {
                best = { index, value, ownKey, released };
            }
        });
        return this.freeSlots.splice(best!.index, 1)[0]!;
    }

    private lease(slot: number, enqueuedAt: number): SlotLease {
        let released = false;
        const release = (): void => {
            if (released) return;
            released = true;
            this.releases += 1;
            this.lastReleased[slot] = this.releases;
            this.freeSlots.push(slot);
            this.freeSlots.sort((a, b) => a - b);
            this.grantWaiters();
        };
        return { slot, waitedMs: performance.now() - enqueuedAt, release, [Symbol.dispose]: release };
    }
}

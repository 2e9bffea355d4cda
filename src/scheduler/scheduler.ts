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
}

export interface SlotLease extends Disposable {
    readonly slot: number;
    /** Milliseconds spent waiting in the queue. */
    readonly waitedMs: number;
    release(): void;
}

interface Waiter {
    promptTokens: readonly number[];
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

    /**
     * Waits for a slot. Rejects with EngineOverloadedError when the queue is full or the wait
     * times out, and with RequestAbortedError when `signal` aborts first.
     */
    async acquire(promptTokens: readonly number[], signal: AbortSignal): Promise<SlotLease> {
        return (await this.acquireMany(1, promptTokens, signal))[0]!;
    }

    /**
     * Waits for `count` slots at once (n > 1 choices share one prompt), 1 ≤ count ≤ `slots`; the
     * first lease is the slot holding the longest prefix of the prompt. The queue stays FIFO: a
     * request for several slots is not overtaken by later ones while it waits. Rejects as `acquire`.
     */
    acquireMany(count: number, promptTokens: readonly number[], signal: AbortSignal): Promise<SlotLease[]> {
        if (!Number.isInteger(count) || count < 1 || count > this.options.slots) {
            return Promise.reject(new RangeError(`cannot hold ${count} of ${this.options.slots} slots`));
        }
        if (signal.aborted) return Promise.reject(new RequestAbortedError());
        const enqueuedAt = performance.now();
        if (this.waiters.length === 0 && this.freeSlots.length >= count) {
            return Promise.resolve(this.takeFreeSlots(count, promptTokens).map((slot) => this.lease(slot, enqueuedAt)));
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
            next.grant(this.takeFreeSlots(next.count, next.promptTokens));
        }
    }

    /** The free slot holding the longest prefix first, then the least recently used others. */
    private takeFreeSlots(count: number, promptTokens: readonly number[]): number[] {
        const slots = [this.takeFreeSlot(promptTokens)];
        // The others get the first one's state copied in: which ones matters only for the LRU order.
        while (slots.length < count) slots.push(this.takeFreeSlot([]));
        return slots;
    }

    /** The free slot holding the longest prefix of the prompt; on a tie, the least recently used one. */
    private takeFreeSlot(promptTokens: readonly number[]): number {
        let bestIndex = 0;
        let bestLength = -1;
        let bestReleased = Number.POSITIVE_INFINITY;
        this.freeSlots.forEach((slot, index) => {
            const length = this.options.cachedPrefixLength?.(slot, promptTokens) ?? 0;
            const released = this.lastReleased[slot] ?? 0;
            if (length > bestLength || (length === bestLength && released < bestReleased)) {
                [bestIndex, bestLength, bestReleased] = [index, length, released];
            }
        });
        return this.freeSlots.splice(bestIndex, 1)[0]!;
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

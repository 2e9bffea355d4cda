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
    enqueuedAt: number;
    grant(slot: number): void;
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
    acquire(promptTokens: readonly number[], signal: AbortSignal): Promise<SlotLease> {
        if (signal.aborted) return Promise.reject(new RequestAbortedError());
        const enqueuedAt = performance.now();
        if (this.freeSlots.length > 0) return Promise.resolve(this.lease(this.takeFreeSlot(promptTokens), enqueuedAt));
        if (this.waiters.length >= this.options.maxQueueDepth) {
            return Promise.reject(new EngineOverloadedError(
                `The server is busy: ${this.waiters.length} requests are already waiting (MAPLE_MAX_QUEUE_DEPTH). Retry later.`));
        }
        return new Promise<SlotLease>((resolve, reject) => {
            const leave = (): void => {
                clearTimeout(timer);
                signal.removeEventListener("abort", onAbort);
                const index = this.waiters.indexOf(waiter);
                if (index !== -1) this.waiters.splice(index, 1);
            };
            const onAbort = (): void => {
                leave();
                reject(new RequestAbortedError());
            };
            const timer = setTimeout(() => {
                leave();
                reject(new EngineOverloadedError(
                    `Timed out after ${this.options.queueTimeoutMs / 1000} s waiting for a free slot (MAPLE_QUEUE_TIMEOUT). Retry later.`));
            }, this.options.queueTimeoutMs);
            const waiter: Waiter = {
                promptTokens,
                enqueuedAt,
                grant: (slot) => {
                    leave();
                    resolve(this.lease(slot, enqueuedAt));
                }
            };
            signal.addEventListener("abort", onAbort, { once: true });
            this.waiters.push(waiter);
        });
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
            const next = this.waiters[0];
            if (next !== undefined) next.grant(this.takeFreeSlot(next.promptTokens));
        };
        return { slot, waitedMs: performance.now() - enqueuedAt, release, [Symbol.dispose]: release };
    }
}

import { EngineOverloadedError, RequestAbortedError } from "../errors.js";

export interface SchedulerOptions {
    /** Slots that generate at once (llama.cpp sequences of one context). */
    slots: number;
    /** Requests that may wait for a slot; one more gets 503 engine_overloaded. */
    maxQueueDepth: number;
    /** How long a request may wait for a slot before 503 engine_overloaded. */
    queueTimeoutMs: number;
    /**
     * Which of the free slots (least recently released first) a prompt goes to: the prompt-cache
     * policy's choice (SlotCachePolicy, through Engine.chooseSlot). An empty prompt asks for the
     * slot cheapest to lose. Without it, the least recently used free slot.
     */
    chooseSlot?: (freeSlots: readonly number[], promptTokens: readonly number[], cacheKey: string | undefined) => number;
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
    /** When each slot was last released: the slot choice sees the least recently used first (as llama-server reuses them). */
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

    /** The best free slot for the prompt first (see chooseSlot), then the cheapest others to lose. */
    private takeFreeSlots(count: number, promptTokens: readonly number[], cacheKey: string | undefined): number[] {
        const slots = [this.takeFreeSlot(promptTokens, cacheKey)];
        // The others get the first one's state copied in: nothing of the prompt is reused from them.
        while (slots.length < count) slots.push(this.takeFreeSlot([], undefined));
        return slots;
    }

    /** The free slot `chooseSlot` picks; it sees them least recently used first (as llama-server reuses them), the lower slot first on a tie. */
    private takeFreeSlot(promptTokens: readonly number[], cacheKey: string | undefined): number {
        const candidates = [...this.freeSlots].sort((a, b) => (this.lastReleased[a] ?? 0) - (this.lastReleased[b] ?? 0) || a - b);
        const slot = this.options.chooseSlot?.(candidates, promptTokens, cacheKey) ?? candidates[0]!;
        const index = this.freeSlots.indexOf(slot);
        if (index === -1) throw new RangeError(`slot ${slot} is not free`);
        return this.freeSlots.splice(index, 1)[0]!;
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

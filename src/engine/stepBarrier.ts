/**
 * How long arrived generations wait for one that is out with its consumer (a slow client) before
 * they step without it. Generations still being sampled come out within a millisecond or two
 * (one sequence after another on libuv's pool thread) and are waited for without this timer.
 */
export const slowConsumerWaitMs = 20;

/**
 * Steps all running generations of one llama.cpp context together, and lets exclusive work (a KV
 * cache erase) in between steps.
 *
 * Why: node-llama-cpp decodes in a loop that runs while any decode is queued. With several
 * streams, each stream's next token is queued a little after the loop looked, so batches settle at
 * one stream fewer than are running (measured: 43 decodes for 32 steps of 4 streams), and streams
 * that started apart stay apart, stepping in alternating half-batches (measured: 4 streams in
 * pairs, 0.71× llama-server's aggregate). And an erase, which needs the context lock, waited
 * until every stream had finished: a request joining mid-stream stalled for the others' whole
 * generation (measured 0.9 s).
 *
 * So each generation arrives here before asking for its next token, and all are released in the
 * same tick once every generation has arrived, except those prefilling a prompt: a long prompt is
 * evaluated in batch-size chunks by node-llama-cpp's loop, and the running streams step beside it
 * instead of waiting for its whole prefill.
 *
 * They are released in sequence-id order, because node-llama-cpp builds the batch in the order
 * the decodes were queued, and llama.cpp (split KV cache, one stream per sequence) puts only
 * consecutive, increasing sequence ids into one ubatch (llama_batch_allocr::split_equal). Queued
 * as 1, 0, 2, 3 the batch was decoded as two graphs, {1, 2, 3} then {0}; since every token
 * comes back from sampling in batch order, that order then held for the rest of the generation
 * (measured on maple-preview, 4 streams that joined apart: 122 instead of 104 ms per step).
 */
export class StepBarrier {
    private members = 0;
    private prefilling = 0;
    /** Members whose next token is being decoded or sampled: they arrive within one step. */
    private stepping = 0;
    private waiting: { order: number; resolve: () => void }[] = [];
    private closedBy = 0;
    private timer: NodeJS.Timeout | undefined;
    /** Prompt chunks waiting for exclusive work to end (see prefillGate). */
    private gated: (() => void)[] = [];
    private readonly exclusiveListeners: (() => Promise<void>)[] = [];

    /**
     * `listener` runs when exclusive work waits, and resolves once no generation step is in flight
     * (DirectSteps.settleFor): the work then starts.
     */
    onExclusive(listener: () => Promise<void>): void {
        this.exclusiveListeners.push(listener);
    }

    join(): void {
        this.members += 1;
    }

    leave(): void {
        this.members -= 1;
        this.releaseIfComplete();
    }

    /**
     * Waits until this generation may ask the engine for its next token. `order` is its sequence
     * id: generations released together are released in that order.
     */
    arrive(order: number): Promise<void> | undefined {
        if (this.closedBy === 0 && this.members <= 1) return undefined;
        return new Promise<void>((resolve) => {
            this.waiting.push({ order, resolve });
            this.armTimer();
            this.releaseIfComplete();
        });
    }

    /** Runs one token step of a generation (decode and sample). */
    async step<T>(work: () => Promise<T>): Promise<T> {
        this.stepping += 1;
        try {
            return await work();
        } finally {
            this.stepping -= 1;
        }
    }

    /** Runs a generation's prompt evaluation, during which the others do not wait for it. */
    async prefill<T>(work: () => Promise<T>): Promise<T> {
        this.prefilling += 1;
        this.releaseIfComplete();
        try {
            return await work();
        } finally {
            this.prefilling -= 1;
        }
    }

    /**
     * Runs `work` while no generation queues new tokens, so node-llama-cpp's decode loop drains
     * and releases the context lock that `work` needs.
     */
    async exclusive<T>(work: () => Promise<T>): Promise<T> {
        this.closedBy += 1;
        try {
            // Its work may call llama.cpp on the context without node-llama-cpp's lock: no step may be in flight.
            await Promise.all(this.exclusiveListeners.map((listener) => listener()));
            return await work();
        } finally {
            this.closedBy -= 1;
            if (this.closedBy === 0) {
                const gated = this.gated;
                this.gated = [];
                for (const resolve of gated) resolve();
                this.releaseIfComplete();
                if (this.waiting.length > 0) this.armTimer();
            }
        }
    }

    /**
     * Resolves when a prompt may queue its next chunk: at once, or once the exclusive work asked
     * for meanwhile is done. node-llama-cpp's decode loop keeps the context lock while any decode
     * is queued, so exclusive work (a state save) would otherwise wait for every prompt being
     * evaluated to end, however long (measured: a preamble save waiting 4.9 s for two others).
     */
    prefillGate(): Promise<void> | undefined {
        if (this.closedBy === 0) return undefined;
        return new Promise<void>((resolve) => this.gated.push(resolve));
    }

    /**
     * Only a member out with its consumer is given up on. One still stepping is always waited for:
     * giving up on it would leave it stepping alone next time, and the two groups would alternate
     * half-batches for good (measured: 34 instead of 43.5 tok/s for 4 streams).
     */
    private armTimer(): void {
        this.timer ??= setTimeout(() => {
            this.timer = undefined;
            if (this.stepping > 0) this.armTimer();
            else this.release();
        }, slowConsumerWaitMs);
    }

    private releaseIfComplete(): void {
        if (this.waiting.length > 0 && this.waiting.length >= this.members - this.prefilling) this.release();
    }

    private release(): void {
        clearTimeout(this.timer);
        this.timer = undefined;
        // While closed, waiters stay; reopening re-arms the timer.
        if (this.closedBy > 0) return;
        const released = this.waiting.sort((a, b) => a.order - b.order);
        this.waiting = [];
        // Resolved a microtask later: the generation whose arrival completed the step is still
        // inside arrive() and has not awaited yet; resolved now, it would resume after the others
        // whatever its order.
        queueMicrotask(() => {
            for (const { resolve } of released) resolve();
        });
    }
}

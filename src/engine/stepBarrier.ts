/**
 * How long arrived generations wait for the others before they step without them. The others are
 * still being sampled (one sequence after another on libuv's pool thread, ~0.5–1 ms each over a
 * 152k vocabulary), out with their consumer (a slow client), or in a long prefill.
 */
const stepWaitMs = 5;

/**
 * Steps all running generations of one llama.cpp context together, and lets exclusive work (a KV
 * cache erase) in between steps.
 *
 * Why: node-llama-cpp decodes in a loop that runs while any decode is queued. With several
 * streams, each stream's next token is queued a little after the loop looked, so batches settle at
 * one stream fewer than are running (measured: 43 decodes for 32 steps of 4 streams), and an erase,
 * which needs the context lock, waits until every stream has finished: a request joining
 * mid-stream stalled for the others' whole generation (measured 0.9 s). Here each generation
 * arrives at the barrier before asking for its next token; once every generation has arrived, all
 * are released in the same tick, so their tokens form one batch. Whoever has not arrived within
 * `stepWaitMs` (a long prompt being prefilled in chunks, a slow client) is not waited for, so it
 * never stalls the others for more than that.
 */
export class StepBarrier {
    private members = 0;
    private waiting: (() => void)[] = [];
    private closedBy = 0;
    private reopened: (() => void)[] = [];
    private timer: NodeJS.Timeout | undefined;

    join(): void {
        this.members += 1;
    }

    leave(): void {
        this.members -= 1;
        this.releaseIfComplete();
    }

    /** Waits until this generation may ask the engine for its next token. */
    arrive(): Promise<void> | undefined {
        if (this.closedBy === 0 && this.members <= 1) return undefined;
        return new Promise<void>((resolve) => {
            this.waiting.push(resolve);
            this.timer ??= setTimeout(() => this.release(), stepWaitMs);
            this.releaseIfComplete();
        });
    }

    /**
     * Runs `work` while no generation queues new tokens, so node-llama-cpp's decode loop drains
     * and releases the context lock that `work` needs.
     */
    async exclusive<T>(work: () => Promise<T>): Promise<T> {
        this.closedBy += 1;
        try {
            return await work();
        } finally {
            this.closedBy -= 1;
            if (this.closedBy === 0) this.release();
        }
    }

    private releaseIfComplete(): void {
        if (this.waiting.length > 0 && this.waiting.length >= this.members) this.release();
    }

    private release(): void {
        clearTimeout(this.timer);
        this.timer = undefined;
        if (this.closedBy > 0) return;
        const released = this.waiting;
        this.waiting = [];
        for (const resolve of released) resolve();
    }
}

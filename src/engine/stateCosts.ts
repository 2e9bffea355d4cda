/**
 * What saving a slot's state costs against evaluating its tokens again, as measured on this
 * engine. The two differ by model and machine far more than a constant can say: a save writes the
 * whole state (~0.11 ms per token for maple-preview on 2 cores, ~0.4 ms for qwen3-0.6b, whose
 * state per token is ~3× larger), while evaluating a token costs ~11 ms on maple-preview and
 * ~2 ms on qwen3-0.6b. With one fixed threshold, maple-preview's chat turns (~30 new tokens)
 * were never saved and each next turn evaluated two turns again.
 *
 * A prompt's figure is the lowest of its recent samples: one evaluated beside other work (it
 * shares its batch with others) only ever overstates its cost. A save's is the median of its
 * recent samples, each timed from when it held the context lock (see timeNativeSaves): on an
 * agents run (qwen3-0.6b, 2 cores) saves took 40–430 ms, 281 ms on average, during which no slot
 * decodes; judged by the fastest sample, 20–24 turn states were saved, each costing more than it
 * spared.
 */
export class StateCosts {
    private readonly saveMs = new RecentSamples(recentSamples);
    private readonly prefillMs = new RecentSamples(recentSamples);
    private readonly prefills = new Set<PrefillSample>();

    /** `now`: milliseconds on a monotonic clock (a test's own clock). */
    constructor(private readonly now: () => number = () => performance.now()) {}

    /** A save of `tokens` tokens took `ms` (its own time, not its wait for the context). */
    noteSave(tokens: number, ms: number): void {
        if (tokens >= minimumSampleTokens) this.saveMs.add(ms / tokens);
    }

    /**
     * A prompt evaluation of `tokens` tokens begins; call the returned function when it ends.
     * Prompts evaluated at the same time share batches, so each is charged per token of all of
     * them that were in flight together.
     */
    startPrefill(tokens: number): () => void {
        const sample: PrefillSample = { tokens, batchTokens: 0, startedAt: this.now() };
        this.prefills.add(sample);
        const inFlight = [...this.prefills].reduce((sum, prefill) => sum + prefill.tokens, 0);
        for (const prefill of this.prefills) prefill.batchTokens = Math.max(prefill.batchTokens, inFlight);
        return () => {
            this.prefills.delete(sample);
            if (tokens >= minimumSampleTokens) this.prefillMs.add((this.now() - sample.startedAt) / sample.batchTokens);
        };
    }

    /** Saving a token costs this share of evaluating it again; `fallback` until both were measured. */
    saveToPrefillRatio(fallback: number): number {
        const save = this.saveMs.median;
        const prefill = this.prefillMs.minimum;
        return save === undefined || prefill === undefined || prefill <= 0 ? fallback : save / prefill;
    }
}

interface PrefillSample {
    tokens: number;
    /** The most prompt tokens in flight at once while this one was. */
    batchTokens: number;
    startedAt: number;
}

/** Samples of fewer tokens are mostly fixed overhead (a graph, a sampling), not per-token cost. */
const minimumSampleTokens = 16;
const recentSamples = 16;

/** The last `capacity` samples. */
class RecentSamples {
    private readonly samples: number[] = [];

    constructor(private readonly capacity: number) {}

    add(sample: number): void {
        if (!Number.isFinite(sample)) return;
        this.samples.push(sample);
        if (this.samples.length > this.capacity) this.samples.shift();
    }

    get minimum(): number | undefined {
        return this.samples.length === 0 ? undefined : Math.min(...this.samples);
    }

    /** The middle sample (the upper of the two middle ones for an even count). */
    get median(): number | undefined {
        if (this.samples.length === 0) return undefined;
        return [...this.samples].sort((a, b) => a - b)[Math.floor(this.samples.length / 2)];
    }
}

/**
 * What saving a slot's state costs against evaluating its tokens again, as measured on this
 * engine. The two differ by model and machine far more than a constant can say: a save writes the
 * whole state (~0.11 ms per token for maple-preview on 2 cores, ~0.4 ms for qwen3-0.6b, whose
 * state per token is ~3× larger), while evaluating a token costs ~11 ms on maple-preview and
 * ~2 ms on qwen3-0.6b. With one fixed threshold, maple-preview's chat turns (~30 new tokens)
 * were never saved and each next turn evaluated two turns again.
 *
 * Each figure is the lowest of its recent samples: a sample taken while the context was busy
 * with other work (a save waits for the decode in progress; a prompt shares its batch with
 * others) only ever overstates the cost.
 */
export class StateCosts {
    private readonly saveMs = new RecentMinimum(recentSamples);
    private readonly prefillMs = new RecentMinimum(recentSamples);
    private readonly prefills = new Set<PrefillSample>();

    /** `now`: milliseconds on a monotonic clock (a test's own clock). */
    constructor(private readonly now: () => number = () => performance.now()) {}

    /** A save of `tokens` tokens took `ms` (including any wait for the context). */
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
        const save = this.saveMs.value;
        const prefill = this.prefillMs.value;
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

/** The smallest of the last `capacity` samples. */
class RecentMinimum {
    private readonly samples: number[] = [];

    constructor(private readonly capacity: number) {}

    add(sample: number): void {
        if (!Number.isFinite(sample)) return;
        this.samples.push(sample);
        if (this.samples.length > this.capacity) this.samples.shift();
    }

    get value(): number | undefined {
        return this.samples.length === 0 ? undefined : Math.min(...this.samples);
    }
}

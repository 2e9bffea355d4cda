/**
 * What saving a slot's state costs against evaluating its tokens again, as measured on this
 * engine. The two differ by model and machine far more than a constant can say: a save writes the
 * whole state (~0.11 ms per token for maple-preview on 2 cores, ~0.05–0.4 ms for qwen3-0.6b, whose
 * state per token is ~3× larger), while evaluating a token costs ~11 ms on maple-preview and
 * 7–15 ms on qwen3-0.6b. With one fixed threshold, maple-preview's chat turns (~30 new tokens)
 * were never saved and each next turn evaluated two turns again.
 *
 * Both figures are medians of recent samples, each timed at llama.cpp's own call, so that neither
 * counts its wait for the context: a save from when it holds the lock (see timeNativeStateWork), a
 * prompt's tokens by the batches that evaluated them (see timeNativeBatches). On an agents run
 * (qwen3-0.6b, 2 cores) saves took 40–430 ms, 281 ms on average, during which no slot decodes:
 * judged by the fastest sample, 20–24 turn states were saved, each costing more than it spared.
 * Prompts timed from the JS side were charged for the other slots' prompts they waited beside
 * (1.46 ms a token where their batches cost ~12), and the turns they would have spared were not
 * saved. Small batches cost more a token than large ones (qwen3-0.6b, 4 sequences: 7.1 ms in a
 * 2,564-token batch, 11.8 ms in 4 × 35, 14.3 ms in 4 × 8): the median sits between the cold
 * preambles and the short tails a save spares.
 */
export class StateCosts {
    private readonly saveMs = new RecentSamples(recentSamples);
    private readonly batchMs = new RecentSamples(recentSamples);

    /** A save of `tokens` tokens took `ms` (its own time, not its wait for the context). */
    noteSave(tokens: number, ms: number): void {
        if (tokens >= minimumSampleTokens) this.saveMs.add(ms / tokens);
    }

    /** llama.cpp decoded a batch of `tokens` tokens (prompts' and generated ones) in `ms`. */
    noteBatch(tokens: number, ms: number): void {
        if (tokens >= minimumSampleTokens) this.batchMs.add(ms / tokens);
    }

    /** Saving a token costs this share of evaluating it again; `fallback` until both were measured. */
    saveToPrefillRatio(fallback: number): number {
        const save = this.saveMs.median;
        const prefill = this.batchMs.median;
        return save === undefined || prefill === undefined || prefill <= 0 ? fallback : save / prefill;
    }
}

/** Samples of fewer tokens are mostly fixed overhead (a graph, a sampling), not per-token cost: generation steps, one token a slot. */
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

    /** The middle sample (the upper of the two middle ones for an even count). */
    get median(): number | undefined {
        if (this.samples.length === 0) return undefined;
        return [...this.samples].sort((a, b) => a - b)[Math.floor(this.samples.length / 2)];
    }
}

import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { EngineOverloadedError, MapleError } from "../errors.js";
import type { GenerationCounts, GenerationObserver } from "../core/generateText.js";
import type { PromptCacheReport, PromptCacheTier } from "../engine/types.js";

/**
 * How often the event-loop lag histogram samples. prom-client's 10 ms is a timer that wakes the
 * event loop 100 times a second, and on a core shared with the decode each wake preempts it.
 * Measured on the maple-preview twin (one core, one stream, 2 × 3 requests of 128 tokens): per
 * token, 6.4–6.6 voluntary switches of the main thread and as many preemptions of the decode at
 * 10 ms, 2.6–2.8 at 100 ms; the decode's wait per token 1.97 → 1.86 ms (mean). At 100 ms a stall
 * shorter than that is caught in proportion to its length, enough for a lag gauge.
 */
const eventLoopSampleMs = 100;

/** One served model at scrape time: every series is labelled `model` with its id. */
export interface ModelLoad {
    model: string;
    loaded: boolean;
    memoryBytes: number;
    /** Requests holding the model (routed to it, response not ended). */
    inFlight: number;
    /** Requests holding a slot (generating). */
    running: number;
    /** Requests waiting in the model's queue for a slot. */
    waiting: number;
    /** KV cells held by the running requests' slots (their cached prefixes included). */
    kvCellsInUse: number;
    /** KV cells of all slots: slots × each slot's context size; 0 while not loaded. */
    kvCellsTotal: number;
    /** The prompt cache's cumulative counts; undefined while not loaded or the cache is off. */
    promptCache: PromptCacheReport | undefined;
}

export interface MapleMetricsOptions {
    /** Read at every scrape: each served model (several with --model given more than once), loaded or not. */
    readModels(): ModelLoad[];
}

const promptCacheTiers: readonly PromptCacheTier[] = ["ram", "disk"];
// A restore copies tens of MB: milliseconds to a second.
const restoreBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The reasons exported at 0 from the start, so `rate()` over them works before the first rejection. */
const knownRejectionReasons: readonly string[] = ["queue_full", "queue_timeout", "model_loading"];

// Bucket bounds are vLLM's (vllm/v1/metrics/loggers.py), so dashboards built for it read the same.
const ttftBuckets = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560];
const interTokenBuckets = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
const requestLatencyBuckets = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];

/**
 * Maple's Prometheus metrics, named after vLLM's with a `maple:` prefix (`vllm:num_requests_running`
 * → `maple:num_requests_running`), plus Node's process metrics prefixed `maple_`. Every `maple:`
 * series carries a `model` label (the served model's id, as vLLM's carry `model_name`): each model
 * has its own slots, queue and prompt cache, and `sum()` gives the server's total. Each server has
 * its own registry, so several servers in one process (the tests) never share a series.
 */
export class MapleMetrics {
    readonly registry = new Registry();

    private readonly promptTokens: Counter<"model">;
    private readonly generationTokens: Counter<"model">;
    private readonly prefixCacheHits: Counter<"model">;
    private readonly rejections: Counter<"reason" | "model">;
    private readonly timeToFirstToken: ModelHistogram;
    private readonly interTokenLatency: ModelHistogram;
    private readonly e2eLatency: ModelHistogram;
    private readonly queueTime: ModelHistogram;
    private readonly modelRequests: Counter<"model">;
    private readonly writeTimeouts: Counter<"model">;

    constructor(private readonly options: MapleMetricsOptions) {
        const registers = [this.registry];
        const labelNames = ["model"] as const;
        this.modelGauge("maple:num_requests_running", "Number of requests generating (holding a slot), by model.", (load) => load.running);
        this.modelGauge("maple:num_requests_waiting", "Number of requests waiting in the queue for a slot, by model.", (load) => load.waiting);
        // vLLM's semantics (vllm:kv_cache_usage_perc): the cells of finished requests that a slot
        // keeps as prefix cache are free (the next request in that slot reuses or erases them),
        // so an idle replica reads 0 however much it caches.
        this.modelGauge("maple:kv_cache_usage_perc", "Fraction of KV cells held by running requests (0-1): their slots' cells in use over all slots' cells, by model.",
            (load) => (load.kvCellsTotal === 0 ? 0 : load.kvCellsInUse / load.kvCellsTotal));
        // Series of models that served nothing yet read 0, so `rate()` over them works from the start.
        const zeroForEveryModel = <Label extends string>(counter: Counter<Label | "model">, others: Record<Label, string>[] = [{} as Record<Label, string>]): void => {
            for (const { model } of options.readModels()) for (const labels of others) counter.inc({ ...labels, model }, 0);
        };
        this.promptTokens = new Counter({
            name: "maple:prompt_tokens_total", help: "Number of prompt tokens of started generations, cached ones included, by model.", labelNames, registers,
            collect: () => zeroForEveryModel(this.promptTokens)
        });
        this.generationTokens = new Counter({
            name: "maple:generation_tokens_total", help: "Number of generated tokens, by model.", labelNames, registers,
            collect: () => zeroForEveryModel(this.generationTokens)
        });
        this.prefixCacheHits = new Counter({
            name: "maple:prefix_cache_hits_total", help: "Number of prompt tokens not evaluated: kept in a slot or restored from the prompt cache, by model.",
            labelNames, registers, collect: () => zeroForEveryModel(this.prefixCacheHits)
        });
        this.rejections = new Counter({
            name: "maple:request_rejections_total", help: "Number of requests answered 503, by reason and model.", labelNames: ["reason", "model"] as const, registers,
            collect: () => zeroForEveryModel(this.rejections, knownRejectionReasons.map((reason) => ({ reason })))
        });
        const histogram = (name: string, help: string, buckets: number[]): ModelHistogram => new ModelHistogram({ name, help, buckets, registers }, options.readModels);
        this.timeToFirstToken = histogram("maple:time_to_first_token_seconds",
            "Time from the start of generation (queue wait included) to the first token, by model.", ttftBuckets);
        this.interTokenLatency = histogram("maple:inter_token_latency_seconds", "Time between consecutive generated tokens, by model.", interTokenBuckets);
        this.e2eLatency = histogram("maple:e2e_request_latency_seconds",
            "Time from the start of generation (queue wait included) to its end, for completed generations, by model.", requestLatencyBuckets);
        this.queueTime = histogram("maple:request_queue_time_seconds", "Time a request waited for a slot, by model.", requestLatencyBuckets);
        this.registerPromptCache();
        this.modelRequests = new Counter({
            name: "maple:model_requests_total", help: "Requests routed to each model (generations, tokenize, embeddings), by model.", labelNames, registers
        });
        this.writeTimeouts = new Counter({
            name: "maple:stream_write_timeouts_total",
            help: "Streamed responses cut because the client read nothing for the write timeout (MAPLE_WRITE_TIMEOUT), freeing their slots, by model.",
            labelNames, registers, collect: () => zeroForEveryModel(this.writeTimeouts)
        });
        this.modelGauge("maple:model_loaded", "1 while the model is loaded, else 0, by model.", (load) => (load.loaded ? 1 : 0));
        this.modelGauge("maple:model_memory_bytes", "Weights + KV cache of the loaded model, as allocated, by model.", (load) => load.memoryBytes);
        this.modelGauge("maple:model_requests_in_flight", "Requests holding the model (it is not unloaded under them), by model.", (load) => load.inFlight);
        this.modelGauge("maple:model_requests_running", "Requests generating on the model's slots, by model.", (load) => load.running);
        this.modelGauge("maple:model_requests_waiting", "Requests waiting in the model's queue, by model.", (load) => load.waiting);
        collectDefaultMetrics({ register: this.registry, prefix: "maple_", eventLoopMonitoringPrecision: eventLoopSampleMs });
    }

    /** A gauge read at every scrape, one series per served model. */
    private modelGauge(name: string, help: string, pick: (load: ModelLoad) => number): void {
        const { readModels } = this.options;
        new Gauge({
            name, help, labelNames: ["model"] as const, registers: [this.registry],
            collect() {
                this.reset();
                for (const load of readModels()) this.set({ model: load.model }, pick(load));
            }
        });
    }

    /**
     * The prompt cache's series, by model: counters per tier (saves, restores, evictions, ignored
     * entries), the tokens restored, the bytes held and allowed per tier, and restore times. Each
     * model's engine counts; each scrape adds what it counted since the last one (a scrape
     * that finds the model unloaded starts it over at 0, as its next engine counts from 0).
     */
    private registerPromptCache(): void {
        const registers = [this.registry];
        const { readModels } = this.options;
        const tierCounter = (name: string, help: string, pick: (report: PromptCacheReport) => Record<PromptCacheTier, number>): void => {
            const seen = new Map<string, Record<PromptCacheTier, number>>();
            const counter: Counter<"tier" | "model"> = new Counter({
                name, help, labelNames: ["tier", "model"] as const, registers,
                collect() {
                    for (const { model, promptCache } of readModels()) {
                        const last = seen.get(model) ?? { ram: 0, disk: 0 };
                        for (const tier of promptCacheTiers) {
                            // Unloaded: its next engine counts from 0.
                            const value = promptCache === undefined ? 0 : pick(promptCache)[tier];
                            counter.inc({ tier, model }, Math.max(0, value - last[tier]));
                            last[tier] = value;
                        }
                        seen.set(model, last);
                    }
                }
            });
        };
        tierCounter("maple:prompt_cache_saves_total", "Slot states saved into the prompt cache, by tier (ram, disk) and model.", (report) => report.saves);
        tierCounter("maple:prompt_cache_restores_total", "Saved states restored into a slot, by tier and model.", (report) => report.restores);
        tierCounter("maple:prompt_cache_preamble_saves_total",
            "Of the saves, states where a prompt's shared preamble (system prompt and tools) ends, by tier and model.", (report) => report.preambleSaves);
        tierCounter("maple:prompt_cache_preamble_restores_total", "Of the restores, shared preambles' states, by tier and model.", (report) => report.preambleRestores);
        tierCounter("maple:prompt_cache_evictions_total", "Saved states evicted to keep the tier within its bound, by tier and model.", (report) => report.evictions);
        tierCounter("maple:prompt_cache_ignored_entries_total", "Saved states found unusable (another model's, corrupted) and never loaded, by tier and model.",
            (report) => report.ignored);
        const restoredSeen = new Map<string, number>();
        const restoredTokens: Counter<"model"> = new Counter({
            name: "maple:prompt_cache_restored_tokens_total",
            help: "Tokens held by the states restored (before any tail the prompt does not share is erased), by model.", labelNames: ["model"] as const, registers,
            collect() {
                for (const { model, promptCache } of readModels()) {
                    const last = restoredSeen.get(model) ?? 0;
                    const value = promptCache?.restoredTokens ?? 0;
                    restoredTokens.inc({ model }, Math.max(0, value - last));
                    restoredSeen.set(model, value);
                }
            }
        });
        const tierGauge = (name: string, help: string, pick: (report: PromptCacheReport) => Record<PromptCacheTier, number>): void => {
            new Gauge({
                name, help, labelNames: ["tier", "model"] as const, registers,
                collect() {
                    this.reset();
                    for (const { model, promptCache } of readModels()) {
                        for (const tier of promptCacheTiers) this.set({ tier, model }, promptCache === undefined ? 0 : pick(promptCache)[tier]);
                    }
                }
            });
        };
        tierGauge("maple:prompt_cache_bytes", "Bytes of saved states held, by tier and model.", (report) => report.bytes);
        tierGauge("maple:prompt_cache_limit_bytes", "The bound of each tier (MAPLE_CACHE_RAM, MAPLE_CACHE_DISK); 0 when off, by model.", (report) => report.limitBytes);
        const modelGauge = (name: string, help: string, pick: (report: PromptCacheReport) => number): void => {
            new Gauge({
                name, help, labelNames: ["model"] as const, registers,
                collect() {
                    this.reset();
                    for (const { model, promptCache } of readModels()) if (promptCache !== undefined) this.set({ model }, pick(promptCache));
                }
            });
        };
        modelGauge("maple:prompt_cache_save_to_prefill_ratio", "What saving a token's state costs as a share of evaluating it again, as measured, by model.",
            (report) => report.saveRule.saveToPrefillRatio);
        modelGauge("maple:prompt_cache_return_share", "The share of slots' states wanted again after their slots were reused (what a save is weighed by), by model.",
            (report) => report.saveRule.returnShare);
        // Registered before the wait's histogram, whose samples its scrape takes: a scrape collects in that order.
        const restoreSeconds = new ModelHistogram({
            name: "maple:prompt_cache_restore_seconds",
            help: "Time llama.cpp took to restore a saved state into a slot (checksum check included for disk entries), without the wait for the context, by model.",
            buckets: restoreBuckets, registers
        }, readModels, (models) => {
            for (const { model, promptCache } of models) {
                for (const { seconds, waitSeconds } of promptCache?.takeRestoreSeconds() ?? []) {
                    restoreSeconds.observe(model, seconds);
                    restoreWaitSeconds.observe(model, waitSeconds);
                }
            }
        });
        const restoreWaitSeconds = new ModelHistogram({
            name: "maple:prompt_cache_restore_wait_seconds", help: "Time a restore waited for the context (the other slots' decodes in flight) before it ran, by model.",
            buckets: restoreBuckets, registers
        }, readModels);
    }

    /** Counts a request routed to `model`. */
    countModelRequest(model: string): void {
        this.modelRequests.inc({ model });
    }

    /** The exposition's Content-Type (`text/plain; version=0.0.4; charset=utf-8`). */
    get contentType(): string {
        return this.registry.contentType;
    }

    /** Every metric in Prometheus' text format. */
    expose(): Promise<string> {
        return this.registry.metrics();
    }

    /**
     * An observer for one generation on `model` (the served id); its clock starts now, so create
     * it as the request is handed to generation. Per token it costs one clock read and one
     * histogram observation.
     */
    observeGeneration(model: string): GenerationObserver {
        const startedAt = performance.now();
        let lastTokenAt = startedAt;
        const labels = { model };
        return {
            onFirstToken: () => {
                lastTokenAt = performance.now();
                this.timeToFirstToken.observe(model, (lastTokenAt - startedAt) / 1000);
            },
            onToken: () => {
                const now = performance.now();
                this.interTokenLatency.observe(model, (now - lastTokenAt) / 1000);
                lastTokenAt = now;
            },
            onEnd: (counts, completed) => this.recordEnd(labels, counts, completed, startedAt)
        };
    }

    /**
     * Counts a request answered 503 for `model` (the model it was routed to; the default model for
     * one refused before routing, e.g. while shutting down); any other error is not a rejection.
     */
    countRejection(error: unknown, model: string): void {
        if (error instanceof MapleError && (error.kind === "overloaded" || error.kind === "unavailable")) this.rejections.inc({ reason: rejectionReason(error), model });
    }

    /** A stream was cut: its client read nothing for the write timeout. */
    countWriteTimeout(model: string): void {
        this.writeTimeouts.inc({ model });
    }

    /** Drops every series (the server is closing). */
    clear(): void {
        this.registry.clear();
    }

    private recordEnd(labels: { model: string }, counts: GenerationCounts, completed: boolean, startedAt: number): void {
        // Tokens count whether or not the generation completed: the work was done.
        this.promptTokens.inc(labels, counts.promptTokens);
        this.generationTokens.inc(labels, counts.completionTokens);
        this.prefixCacheHits.inc(labels, counts.cachedTokens);
        this.queueTime.observe(labels.model, counts.queuedMs / 1000);
        if (completed) this.e2eLatency.observe(labels.model, (performance.now() - startedAt) / 1000);
    }
}

/**
 * A histogram labelled `model` whose series exist from the start for every served model (all
 * buckets 0), as an unlabelled one would, so `rate()` and dashboards see them before the first
 * observation. `onScrape` runs first at each scrape (to observe what was counted elsewhere).
 */
class ModelHistogram {
    private readonly histogram: Histogram<"model">;
    /** Models whose series exist (zeroing one again would drop its observations). */
    private readonly present = new Set<string>();

    constructor(config: { name: string; help: string; buckets: number[]; registers: Registry[] }, readModels: () => ModelLoad[],
        onScrape?: (models: ModelLoad[]) => void) {
        const present = this.present;
        this.histogram = new Histogram({
            ...config, labelNames: ["model"] as const,
            collect() {
                const models = readModels();
                onScrape?.(models);
                for (const { model } of models) {
                    if (present.has(model)) continue;
                    present.add(model);
                    this.zero({ model });
                }
            }
        });
    }

    observe(model: string, seconds: number): void {
        this.present.add(model);
        this.histogram.observe({ model }, seconds);
    }
}

/** The `reason` label of a 503: `queue_full`, `queue_timeout`, `model_loading`, else the error's code. */
export function rejectionReason(error: MapleError): string {
    if (error instanceof EngineOverloadedError) return error.reason;
    return error.code ?? "unavailable";
}

import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { EngineOverloadedError, MapleError } from "../errors.js";
import type { GenerationCounts, GenerationObserver } from "../core/generateText.js";
import type { PromptCacheReport, PromptCacheTier } from "../engine/types.js";

/** What the scheduler holds at scrape time. */
export interface SchedulerLoad {
    /** Requests holding a slot (generating). */
    running: number;
    /** Requests waiting in the queue for a slot. */
    waiting: number;
    /** KV cells held by the running requests' slots (their cached prefixes included). */
    kvCellsInUse: number;
    /** KV cells of all slots: slots × each slot's context size. */
    kvCellsTotal: number;
}

/** One served model at scrape time, for the series with a `model` label. */
export interface ModelLoad {
    model: string;
    loaded: boolean;
    memoryBytes: number;
    /** Requests holding the model (routed to it, response not ended). */
    inFlight: number;
    running: number;
    waiting: number;
}

export interface MapleMetricsOptions {
    /** Read at every scrape: each served model (several with --model given more than once). */
    readModels?(): ModelLoad[];
    /** Read at every scrape; undefined while no model is ready (both gauges then read 0). */
    readLoad(): SchedulerLoad | undefined;
    /** Read at every scrape: the prompt cache's cumulative counts, undefined while no model is ready or the cache is off. */
    readPromptCache?(): PromptCacheReport | undefined;
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
 * → `maple:num_requests_running`), plus Node's process metrics prefixed `maple_`. Each server has
 * its own registry, so several servers in one process (the tests) never share a series.
 */
export class MapleMetrics {
    readonly registry = new Registry();

    private readonly promptTokens: Counter;
    private readonly generationTokens: Counter;
    private readonly prefixCacheHits: Counter;
    private readonly rejections: Counter<"reason">;
    private readonly timeToFirstToken: Histogram;
    private readonly interTokenLatency: Histogram;
    private readonly e2eLatency: Histogram;
    private readonly queueTime: Histogram;
    private readonly modelRequests: Counter<"model">;

    constructor(options: MapleMetricsOptions) {
        const registers = [this.registry];
        new Gauge({
            name: "maple:num_requests_running", help: "Number of requests generating (holding a slot).", registers,
            collect() {
                this.set(options.readLoad()?.running ?? 0);
            }
        });
        new Gauge({
            name: "maple:num_requests_waiting", help: "Number of requests waiting in the queue for a slot.", registers,
            collect() {
                this.set(options.readLoad()?.waiting ?? 0);
            }
        });
        new Gauge({
            // vLLM's semantics (vllm:kv_cache_usage_perc): the cells of finished requests that a slot
            // keeps as prefix cache are free (the next request in that slot reuses or erases them),
            // so an idle replica reads 0 however much it caches.
            name: "maple:kv_cache_usage_perc", help: "Fraction of KV cells held by running requests (0-1): their slots' cells in use over all slots' cells.",
            registers,
            collect() {
                const load = options.readLoad();
                this.set(load === undefined || load.kvCellsTotal === 0 ? 0 : load.kvCellsInUse / load.kvCellsTotal);
            }
        });
        this.promptTokens = new Counter({ name: "maple:prompt_tokens_total", help: "Number of prompt tokens of started generations, cached ones included.", registers });
        this.generationTokens = new Counter({ name: "maple:generation_tokens_total", help: "Number of generated tokens.", registers });
        this.prefixCacheHits = new Counter({
            name: "maple:prefix_cache_hits_total", help: "Number of prompt tokens not evaluated: kept in a slot or restored from the prompt cache.", registers
        });
        this.rejections = new Counter({
            name: "maple:request_rejections_total", help: "Number of requests answered 503, by reason.", labelNames: ["reason"] as const, registers
        });
        for (const reason of knownRejectionReasons) this.rejections.inc({ reason }, 0);
        this.timeToFirstToken = new Histogram({
            name: "maple:time_to_first_token_seconds", help: "Time from the start of generation (queue wait included) to the first token.",
            buckets: ttftBuckets, registers
        });
        this.interTokenLatency = new Histogram({
            name: "maple:inter_token_latency_seconds", help: "Time between consecutive generated tokens.", buckets: interTokenBuckets, registers
        });
        this.e2eLatency = new Histogram({
            name: "maple:e2e_request_latency_seconds", help: "Time from the start of generation (queue wait included) to its end, for completed generations.",
            buckets: requestLatencyBuckets, registers
        });
        this.queueTime = new Histogram({
            name: "maple:request_queue_time_seconds", help: "Time a request waited for a slot.", buckets: requestLatencyBuckets, registers
        });
        this.registerPromptCache(options);
        this.modelRequests = new Counter({
            name: "maple:model_requests_total", help: "Requests routed to each model (generations, tokenize, embeddings), by model.", labelNames: ["model"] as const, registers
        });
        this.registerModels(options);
        collectDefaultMetrics({ register: this.registry, prefix: "maple_" });
    }

    /**
     * The prompt cache's series: counters per tier (saves, restores, evictions, ignored entries),
     * the tokens restored, the bytes held and allowed per tier, and restore times. The engine
     * counts; each scrape adds what it counted since the last one.
     */
    private registerPromptCache(options: MapleMetricsOptions): void {
        const registers = [this.registry];
        const read = (): PromptCacheReport | undefined => options.readPromptCache?.();
        const tierCounter = (name: string, help: string, pick: (report: PromptCacheReport) => Record<PromptCacheTier, number>): void => {
            const seen: Record<PromptCacheTier, number> = { ram: 0, disk: 0 };
            const counter: Counter<"tier"> = new Counter({
                name, help, labelNames: ["tier"] as const, registers,
                collect() {
                    const report = read();
                    if (report === undefined) return;
                    for (const tier of promptCacheTiers) {
                        const value = pick(report)[tier];
                        if (value > seen[tier]) counter.inc({ tier }, value - seen[tier]);
                        seen[tier] = value;
                    }
                }
            });
            for (const tier of promptCacheTiers) counter.inc({ tier }, 0);
        };
        tierCounter("maple:prompt_cache_saves_total", "Slot states saved into the prompt cache, by tier (ram, disk).", (report) => report.saves);
        tierCounter("maple:prompt_cache_restores_total", "Saved states restored into a slot, by tier.", (report) => report.restores);
        tierCounter("maple:prompt_cache_preamble_saves_total", "Of the saves, states where a prompt's shared preamble (system prompt and tools) ends, by tier.",
            (report) => report.preambleSaves);
        tierCounter("maple:prompt_cache_preamble_restores_total", "Of the restores, shared preambles' states, by tier.", (report) => report.preambleRestores);
        tierCounter("maple:prompt_cache_evictions_total", "Saved states evicted to keep the tier within its bound, by tier.", (report) => report.evictions);
        tierCounter("maple:prompt_cache_ignored_entries_total", "Saved states found unusable (another model's, corrupted) and never loaded, by tier.",
            (report) => report.ignored);
        let restoredSeen = 0;
        const restoredTokens: Counter = new Counter({
            name: "maple:prompt_cache_restored_tokens_total", help: "Tokens held by the states restored (before any tail the prompt does not share is erased).",
            registers,
            collect() {
                const value = read()?.restoredTokens ?? restoredSeen;
                if (value > restoredSeen) restoredTokens.inc(value - restoredSeen);
                restoredSeen = value;
            }
        });
        new Gauge({
            name: "maple:prompt_cache_bytes", help: "Bytes of saved states held, by tier.", labelNames: ["tier"] as const, registers,
            collect() {
                const report = read();
                for (const tier of promptCacheTiers) this.set({ tier }, report?.bytes[tier] ?? 0);
            }
        });
        new Gauge({
            name: "maple:prompt_cache_limit_bytes", help: "The bound of each tier (MAPLE_CACHE_RAM, MAPLE_CACHE_DISK); 0 when off.", labelNames: ["tier"] as const,
            registers,
            collect() {
                const report = read();
                for (const tier of promptCacheTiers) this.set({ tier }, report?.limitBytes[tier] ?? 0);
            }
        });
        new Histogram({
            name: "maple:prompt_cache_restore_seconds", help: "Time to restore a saved state into a slot (checksum check included for disk entries).",
            buckets: restoreBuckets, registers,
            collect() {
                for (const seconds of read()?.takeRestoreSeconds() ?? []) this.observe(seconds);
            }
        });
    }

    /**
     * Per-model series, labelled `model`: whether it is loaded, its memory, and its requests. The
     * families above stay unlabelled totals over every model, so dashboards made for one model hold.
     */
    private registerModels(options: MapleMetricsOptions): void {
        const registers = [this.registry];
        const gauge = (name: string, help: string, pick: (load: ModelLoad) => number): void => {
            new Gauge({
                name, help, labelNames: ["model"] as const, registers,
                collect() {
                    this.reset();
                    for (const load of options.readModels?.() ?? []) this.set({ model: load.model }, pick(load));
                }
            });
        };
        gauge("maple:model_loaded", "1 while the model is loaded, else 0, by model.", (load) => (load.loaded ? 1 : 0));
        gauge("maple:model_memory_bytes", "Weights + KV cache of the loaded model (estimated at load), by model.", (load) => load.memoryBytes);
        gauge("maple:model_requests_in_flight", "Requests holding the model (it is not unloaded under them), by model.", (load) => load.inFlight);
        gauge("maple:model_requests_running", "Requests generating on the model's slots, by model.", (load) => load.running);
        gauge("maple:model_requests_waiting", "Requests waiting in the model's queue, by model.", (load) => load.waiting);
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
     * An observer for one generation; its clock starts now, so create it as the request is handed
     * to generation. Per token it costs one clock read and one histogram observation.
     */
    observeGeneration(): GenerationObserver {
        const startedAt = performance.now();
        let lastTokenAt = startedAt;
        return {
            onFirstToken: () => {
                lastTokenAt = performance.now();
                this.timeToFirstToken.observe((lastTokenAt - startedAt) / 1000);
            },
            onToken: () => {
                const now = performance.now();
                this.interTokenLatency.observe((now - lastTokenAt) / 1000);
                lastTokenAt = now;
            },
            onEnd: (counts, completed) => this.recordEnd(counts, completed, startedAt)
        };
    }

    /** Counts a request answered 503; any other error is not a rejection and is ignored. */
    countRejection(error: unknown): void {
        if (error instanceof MapleError && (error.kind === "overloaded" || error.kind === "unavailable")) this.rejections.inc({ reason: rejectionReason(error) });
    }

    /** Drops every series (the server is closing). */
    clear(): void {
        this.registry.clear();
    }

    private recordEnd(counts: GenerationCounts, completed: boolean, startedAt: number): void {
        // Tokens count whether or not the generation completed: the work was done.
        this.promptTokens.inc(counts.promptTokens);
        this.generationTokens.inc(counts.completionTokens);
        this.prefixCacheHits.inc(counts.cachedTokens);
        this.queueTime.observe(counts.queuedMs / 1000);
        if (completed) this.e2eLatency.observe((performance.now() - startedAt) / 1000);
    }
}

/** The `reason` label of a 503: `queue_full`, `queue_timeout`, `model_loading`, else the error's code. */
export function rejectionReason(error: MapleError): string {
    if (error instanceof EngineOverloadedError) return error.reason;
    return error.code ?? "unavailable";
}

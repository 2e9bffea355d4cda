import type { FastifyRequest } from "fastify";
import type { MapleConfig } from "../../config/settings.js";
import type { GenerationOptions } from "../../core/index.js";
import type { MapleMetrics } from "../../metrics/metrics.js";
import type { ResponseStore } from "../../responses/responseStore.js";
import type { SamplingDefaults } from "../../wire/sampling.js";
import type { ModelHost } from "../../core/modelHost.js";

/** What every route is given: the config, the served model, and the checks they share. */
export interface RouteContext {
    config: MapleConfig;
    host: ModelHost;
    /** This server's Prometheus metrics; generation routes pass `metrics.observeGeneration()` to each generation. */
    metrics: MapleMetrics;
    samplingDefaults: SamplingDefaults;
    /** Where /v1/responses keeps `store: true` responses (MAPLE_RESPONSES_STORE). */
    responseStore: ResponseStore;
    version: string;
    /** Unix seconds reported as the model's `created`. */
    createdAt: number;
    /** Aborts when the server's shutdown grace period is over: running generations end with an error. */
    shutdownSignal: AbortSignal;
    /** The model id to echo; 404 under MAPLE_STRICT_MODEL when the request names another. */
    checkModel(requested: string | undefined): string;
    /**
     * How a generation route runs its request through the core: `signal` (the request's
     * cancellation), the prompt limit, the metrics observers, and MAPLE_LOG_PROMPTS' debug line.
     */
    generationOptions(request: FastifyRequest, signal: AbortSignal): GenerationOptions;
}

import type { FastifyReply, FastifyRequest } from "fastify";
import type { MapleConfig } from "../../config/settings.js";
import type { GenerationOptions } from "../../core/index.js";
import type { MapleMetrics } from "../../metrics/metrics.js";
import type { ResponseStore } from "../../responses/responseStore.js";
import type { SamplingDefaults } from "../../wire/sampling.js";
import type { ModelHost, ReadyModel } from "../../core/modelHost.js";
import type { ModelRegistry, ReadyEmbeddingModel } from "../../core/modelRegistry.js";

/** The model a request was routed to, loaded and held. */
export interface ChosenModel<Ready> {
    model: Ready;
    /** The name to echo: the request's, else the model's. */
    modelId: string;
    /** The served model's id. */
    servedId: string;
}

/** What every route is given: the config, the served model, and the checks they share. */
export interface RouteContext {
    config: MapleConfig;
    /** The default model's host (its draining state is the server's). */
    host: ModelHost;
    /** Every served model, by name. */
    models: ModelRegistry;
    /** This server's Prometheus metrics; generationOptions gives each generation its observer. */
    metrics: MapleMetrics;
    samplingDefaults: SamplingDefaults;
    /** Where /v1/responses keeps `store: true` responses (MAPLE_RESPONSES_STORE). */
    responseStore: ResponseStore;
    version: string;
    /** Unix seconds reported as the model's `created`. */
    createdAt: number;
    /** Aborts when the server's shutdown grace period is over: running generations end with an error. */
    shutdownSignal: AbortSignal;
    /** The model id to echo; 404 under MAPLE_STRICT_MODEL when the request names no served model. */
    checkModel(requested: string | undefined): string;
    /**
     * The chat model a request names (else the default), loaded, held until the response ends
     * (so it is never unloaded under it), with the id to echo. 503 model_loading while it loads
     * past the queue timeout; 400 for an embedding model; 404 under MAPLE_STRICT_MODEL.
     * `keepAliveMs`: Ollama's `keep_alive` for the model (null: for good). `servedId` is the served
     * model's own id (the metrics' `model` label), whatever name the request gave.
     */
    chatModel(reply: FastifyReply, requested: string | undefined, signal: AbortSignal, keepAliveMs?: number | null): Promise<ChosenModel<ReadyModel>>;
    /** The same for an embedding model: a chat model is a 400 that says what to serve instead. */
    embeddingModel(reply: FastifyReply, requested: string | undefined, signal: AbortSignal, keepAliveMs?: number | null): Promise<ChosenModel<ReadyEmbeddingModel>>;
    /**
     * How a generation route runs its request through the core on the model `servedId`: `signal`
     * (the request's cancellation), the prompt limit, the metrics observers (labelled with the
     * model), and MAPLE_LOG_PROMPTS' debug line.
     */
    generationOptions(request: FastifyRequest, signal: AbortSignal, servedId: string): GenerationOptions;
}

import cors from "@fastify/cors";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { MapleConfig } from "../config/settings.js";
import { NotFoundError, ShuttingDownError } from "../errors.js";
import { MapleMetrics } from "../metrics/metrics.js";
import { MemoryResponseStore } from "../responses/memoryResponseStore.js";
import { responseStoreLimits } from "../responses/openResponseStore.js";
import type { ResponseStore } from "../responses/responseStore.js";
import type { ModelHost } from "../core/modelHost.js";
import type { ModelRegistry } from "../core/modelRegistry.js";
import { createApiKeyCheck } from "./auth.js";
import { clientErrorHandler, errorHandler } from "./errorHandler.js";
import { registerJsonBodyParser } from "./jsonBody.js";
import { chatCompletionsRoute } from "./routes/chatCompletions.js";
import { completionsRoute } from "./routes/completions.js";
import { detokenizeRoute } from "./routes/detokenize.js";
import { embeddingsRoute } from "./routes/embeddings.js";
import { healthRoute } from "./routes/health.js";
import { livezRoute } from "./routes/livez.js";
import { messagesRoute } from "./routes/messages.js";
import { messagesCountTokensRoute } from "./routes/messagesCountTokens.js";
import { metricsRoute } from "./routes/metrics.js";
import { modelsRoute } from "./routes/models.js";
import { ollamaRoutes } from "./routes/ollama.js";
import { responsesRoute } from "./routes/responses.js";
import type { RouteContext } from "./routes/routeContext.js";
import { tokenizeRoute } from "./routes/tokenize.js";
import { serveUnprefixedAliases } from "./unprefixedAliases.js";
import type { WriteDeadline } from "./streamingResponse.js";
import { webUiPaths, webUiRoute } from "./routes/webUi.js";
import { keepAttributionBlocks } from "../anthropic/attributionBlocks.js";

export interface AppOptions {
    config: MapleConfig;
    host: ModelHost;
    models: ModelRegistry;
    logger: FastifyBaseLogger;
    version: string;
    /** Aborted when the shutdown grace period ends: generations still running end with an error. */
    shutdownSignal: AbortSignal;
    /** The response store (startServer opens MAPLE_RESPONSES_STORE's); a memory store with the config's bounds when omitted. */
    responseStore?: ResponseStore;
}

/** The readiness and liveness probes: open without the API key, and answering until the process exits. */
const probeRoutes: ReadonlySet<string> = new Set(["/health", "/livez"]);

/** Routes that answer without the API key, so orchestrators can probe them (and scrapers, with MAPLE_METRICS_PUBLIC), and the web chat's page, which asks for the key itself. */
function openRoutes(config: MapleConfig): Set<string> {
    return new Set([...probeRoutes, ...(config.metricsPublic ? ["/metrics"] : []), ...webUiPaths(config)]);
}

/**
 * Response headers a browser page may read: the retry hints the SDKs honour, and OpenAI's rate
 * headers (Maple sends none itself; a gateway in front of it may).
 */
const exposedResponseHeaders = [
    "retry-after", "retry-after-ms", "x-request-id",
    ...["limit", "remaining", "reset"].flatMap((kind) => [`x-ratelimit-${kind}-requests`, `x-ratelimit-${kind}-tokens`])
];

/** The Fastify app: auth, the one error mapper, and one plugin per route. */
export function buildApp(options: AppOptions): FastifyInstance {
    const { config, models } = options;
    const app = createFastify(config, options.logger);
    registerRequestHooks(app, config);
    const metrics = modelMetrics(models);
    /** The served model each request was routed to, for its 503's `model` label. */
    const routedModel = new WeakMap<FastifyRequest, string>();
    const servedModelOf = (request: FastifyRequest): string => routedModel.get(request) ?? models.default.id;
    // Every 503 (model loading, queue full, queue wait timed out) reaches the error handler through this hook.
    app.addHook("onError", async (request, _reply, error) => metrics.countRejection(error, servedModelOf(request)));
    app.addHook("onClose", async () => metrics.clear());
    app.decorate("streamWriteDeadline", (reply: FastifyReply): WriteDeadline => ({
        ms: config.writeTimeoutSeconds * 1000,
        onExpired() {
            reply.request.log.warn({ writeTimeoutSeconds: config.writeTimeoutSeconds },
                "the client read nothing of its stream for the write timeout; closing it and cancelling its generation");
            metrics.countWriteTimeout(servedModelOf(reply.request));
        }
    }));
    keepAttributionBlocks(config.keepBillingHeader);
    registerRoutes(app, routeContext(options, metrics, routedModel));
    return app;
}

function createFastify(config: MapleConfig, logger: FastifyBaseLogger): FastifyInstance {
    return Fastify({
        loggerInstance: logger,
        bodyLimit: config.maxBodyBytes,
        // A slow client (slowloris) cannot hold a connection forever: its headers must arrive
        // within headersTimeout and the whole request within requestTimeout (Node answers 408
        // through clientErrorHandler). Neither bounds the response: a long generation streams on
        // (a stalled reader is bounded by the write deadline, --write-timeout).
        // Node checks both every connectionsCheckingInterval (default 30 s, which would let a
        // 20 s limit stretch to 50 s).
        connectionTimeout: 0,
        requestTimeout: 120_000,
        keepAliveTimeout: 5_000,
        http: { headersTimeout: 20_000, connectionsCheckingInterval: 2_000 },
        // Model ids in /v1/models/{id} may be long; the URL itself is bounded by Node's 16 KiB header limit.
        routerOptions: { maxParamLength: 16_384 },
        // A URL that does not decode, and requests Node cannot parse, in OpenAI's shape like every other error.
        frameworkErrors: errorHandler,
        clientErrorHandler,
        // Requests that arrive while closing get Maple's own OpenAI-shaped 503 (registerRequestHooks).
        return503OnClosing: false,
        genReqId: () => Math.random().toString(36).slice(2, 10)
    });
}

/** What every request goes through before its route: errors, body parsing, CORS, the closing 503, the replica header, the API key. */
function registerRequestHooks(app: FastifyInstance, config: MapleConfig): void {
    app.setErrorHandler(errorHandler);
    registerJsonBodyParser(app);
    if (config.corsOrigins !== undefined) {
        // Off unless configured: a browser page on another origin cannot call the API by default.
        void app.register(cors, {
            origin: config.corsOrigins.includes("*") ? "*" : config.corsOrigins,
            methods: ["GET", "POST", "DELETE", "OPTIONS"],
            // No allowedHeaders: the preflight's Access-Control-Request-Headers are echoed (with
            // Vary), so Stainless-generated SDKs (openai, anthropic) and their x-stainless-* headers
            // pass. `*` would not do: it never covers Authorization. No cookies are involved.
            exposedHeaders: exposedResponseHeaders,
            maxAge: 600
        });
    }
    let closing = false;
    app.addHook("preClose", async () => {
        closing = true;
    });
    app.addHook("onRequest", async (request) => {
        // Probes keep answering (health: 503 draining) until the process exits.
        if (closing && !probeRoutes.has(request.url.split("?")[0] ?? "")) throw new ShuttingDownError();
    });
    const replicaId = config.replicaId;
    if (replicaId !== undefined) {
        // On the raw response, so streams (which write their own head) carry it too.
        app.addHook("onRequest", async (_request, reply) => {
            reply.raw.setHeader("x-maple-replica", replicaId);
        });
    }
    app.setNotFoundHandler((request) => {
        throw new NotFoundError(`Unknown route: ${request.method} ${request.url.split("?")[0]}`, null, "unknown_route");
    });
    if (config.apiKey !== undefined) {
        const checkApiKey = createApiKeyCheck(config.apiKey);
        const open = openRoutes(config);
        app.addHook("onRequest", async (request) => {
            // Browsers send CORS preflights without credentials; no route serves anything on OPTIONS.
            if (request.method === "OPTIONS") return;
            if (!open.has(request.url.split("?")[0] ?? "")) checkApiKey(request.headers);
        });
    }
}

/** Prometheus metrics over every served model's slots, queue and cache. */
function modelMetrics(models: ModelRegistry): MapleMetrics {
    return new MapleMetrics({
        readModels: () => models.all.map((entry) => {
            const chat = entry.chat.state.status === "ready" ? entry.chat.state : undefined;
            return {
                model: entry.id, loaded: entry.host.state.status === "ready", memoryBytes: entry.memoryBytes, inFlight: entry.inFlight,
                running: chat?.scheduler.active ?? 0, waiting: chat?.scheduler.queueDepth ?? 0,
                kvCellsInUse: chat === undefined ? 0 : chat.scheduler.leasedSlots.reduce((cells, slot) => cells + chat.engine.slotKvCells(slot), 0),
                kvCellsTotal: chat === undefined ? 0 : chat.engine.runtime.slots * chat.engine.runtime.contextSize,
                promptCache: chat?.engine.promptCacheReport()
            };
        })
    });
}

/** What every route is given: the config, the models and how a request takes one, the metrics, the store. */
function routeContext({ config, host, models, version, shutdownSignal, responseStore }: AppOptions, metrics: MapleMetrics,
    routedModel: WeakMap<FastifyRequest, string>): RouteContext {
    /** A request holds its model until its response is over (sent, or the client gone). */
    const holdUntilDone = (reply: FastifyReply, release: () => void): void => {
        if (reply.raw.writableFinished || reply.raw.destroyed) release();
        else reply.raw.once("close", release);
    };
    const routeTo = (reply: FastifyReply) => (entry: { id: string }): void => void routedModel.set(reply.request, entry.id);
    /** A model a request took: held until its response is over, and counted. */
    const taken = <Model>(reply: FastifyReply, use: { model: Model; modelId: string; entry: { id: string }; release: () => void }) => {
        holdUntilDone(reply, use.release);
        metrics.countModelRequest(use.entry.id);
        return { model: use.model, modelId: use.modelId, servedId: use.entry.id };
    };
    return {
        config,
        host,
        models,
        metrics,
        version,
        createdAt: Math.floor(Date.now() / 1000),
        shutdownSignal,
        responseStore: responseStore ?? new MemoryResponseStore(responseStoreLimits(config)),
        samplingDefaults: {
            temperature: config.temperature,
            maxNewTokens: config.maxNewTokens,
            maxNewTokensLimit: config.maxNewTokensLimit
        },
        checkModel(requested) {
            // `maple-preview:latest` is the served `maple-preview` (Ollama's default tag; Copilot sends it to /v1 too).
            if (config.strictModel && requested !== undefined && models.find(requested) === undefined) {
                throw new NotFoundError(`The model '${requested}' does not exist; this server serves ${models.all.map((entry) => `'${entry.id}'`).join(", ")}.`,
                    "model", "model_not_found");
            }
            return requested ?? models.default.id;
        },
        chatModel: async (reply, requested, signal, keepAliveMs) => taken(reply, await models.use(requested, "chat", signal, keepAliveMs, routeTo(reply))),
        embeddingModel: async (reply, requested, signal, keepAliveMs) => taken(reply, await models.use(requested, "embedding", signal, keepAliveMs, routeTo(reply))),
        generationOptions(request, signal, servedId) {
            return {
                signal,
                maxPromptTokens: config.maxPromptTokens,
                observe: () => metrics.observeGeneration(servedId),
                // With MAPLE_LOG_PROMPTS the prompt and the raw output are logged at debug level; otherwise logs never contain them.
                logText: config.logPrompts ? (text) => request.log.debug(text, "generation text") : undefined
            };
        }
    };
}

function registerRoutes(app: FastifyInstance, context: RouteContext): void {
    serveUnprefixedAliases(app);
    healthRoute(app, context);
    livezRoute(app, context);
    modelsRoute(app, context);
    completionsRoute(app, context);
    chatCompletionsRoute(app, context);
    embeddingsRoute(app, context);
    messagesRoute(app, context);
    messagesCountTokensRoute(app, context);
    responsesRoute(app, context);
    ollamaRoutes(app, context);
    tokenizeRoute(app, context);
    detokenizeRoute(app, context);
    metricsRoute(app, context);
    webUiRoute(app, context);
}

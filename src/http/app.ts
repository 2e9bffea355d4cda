import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { MapleConfig } from "../config/settings.js";
import { NotFoundError } from "../errors.js";
import type { ModelHost } from "../server/modelHost.js";
import { createBearerCheck } from "./auth.js";
import { errorHandler } from "./errorHandler.js";
import { chatCompletionsRoute } from "./routes/chatCompletions.js";
import { completionsRoute } from "./routes/completions.js";
import { healthRoute } from "./routes/health.js";
import { modelsRoute } from "./routes/models.js";
import type { RouteContext } from "./routes/routeContext.js";

export interface AppOptions {
    config: MapleConfig;
    host: ModelHost;
    logger: FastifyBaseLogger;
    version: string;
}

/** Routes that answer without the API key, so orchestrators can probe them. */
const openRoutes = new Set(["/health"]);

/** The Fastify app: auth, the one error mapper, and one plugin per route. */
export function buildApp({ config, host, logger, version }: AppOptions): FastifyInstance {
    const app = Fastify({
        loggerInstance: logger,
        bodyLimit: config.maxBodyBytes,
        // A slow client (slowloris) cannot hold a connection forever.
        connectionTimeout: 0,
        requestTimeout: 120_000,
        keepAliveTimeout: 5_000,
        return503OnClosing: true,
        genReqId: () => Math.random().toString(36).slice(2, 10)
    });

    app.setErrorHandler(errorHandler);
    app.setNotFoundHandler((request) => {
        throw new NotFoundError(`Unknown route: ${request.method} ${request.url.split("?")[0]}`, null, "unknown_route");
    });

    if (config.apiKey !== undefined) {
        const checkBearer = createBearerCheck(config.apiKey);
        app.addHook("onRequest", async (request) => {
            if (!openRoutes.has(request.url.split("?")[0] ?? "")) checkBearer(request.headers.authorization);
        });
    }

    const context: RouteContext = {
        config,
        host,
        version,
        createdAt: Math.floor(Date.now() / 1000),
        samplingDefaults: {
            temperature: config.temperature,
            maxNewTokens: config.maxNewTokens,
            maxNewTokensLimit: config.maxNewTokensLimit
        },
        checkModel(requested) {
            if (config.strictModel && requested !== undefined && requested !== config.modelId) {
                throw new NotFoundError(`The model '${requested}' does not exist; this server serves '${config.modelId}'.`, "model", "model_not_found");
            }
            return requested ?? config.modelId;
        }
    };
    healthRoute(app, context);
    modelsRoute(app, context);
    completionsRoute(app, context);
    chatCompletionsRoute(app, context);
    return app;
}

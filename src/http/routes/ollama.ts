import type { FastifyInstance, FastifyReply } from "fastify";
import { NotFoundError } from "../../errors.js";
import { ollamaErrorFormat } from "../../ollama/errorFormat.js";
import { toMapleError } from "../errorHandler.js";
import { parseJsonBody } from "../jsonBody.js";
import { ollamaChatRoute } from "./ollamaChat.js";
import { ollamaGenerateRoute } from "./ollamaGenerate.js";
import { ollamaModelFilesRoute } from "./ollamaModelFiles.js";
import { ollamaModelsRoute } from "./ollamaModels.js";
import { ollamaRootRoute } from "./ollamaRoot.js";
import { ollamaUnsupportedRoute } from "./ollamaUnsupported.js";
import type { RouteContext } from "./routeContext.js";

/**
 * Ollama's API (`/api/*`, see docs/ollama.md), in its own encapsulated context: Ollama reads any
 * body as JSON whatever its Content-Type (its docs' `curl -d '{…}'` sends
 * application/x-www-form-urlencoded), so these routes do too, with the same checks as every JSON body.
 */
export function ollamaRoutes(app: FastifyInstance, context: RouteContext): void {
    ollamaRootRoute(app, context);
    void app.register(async (api) => {
        api.addContentTypeParser("*", { parseAs: "buffer" }, (request, body, done) => {
            try {
                done(null, parseJsonBody(undefined, body as Buffer));
            } catch (error) {
                done(error as Error, undefined);
            }
        });
        ollamaChatRoute(api, context);
        ollamaGenerateRoute(api, context);
        ollamaModelsRoute(api, context);
        ollamaModelFilesRoute(api, context);
        ollamaUnsupportedRoute(api, context);
    });
    // Any other /api path (or method) answers in Ollama's shape too, its body's errors included.
    void app.register(async (api) => {
        const answer = (error: unknown, reply: FastifyReply): void => {
            const { status, headers, body } = ollamaErrorFormat.response(toMapleError(error));
            void reply.code(status).headers(headers).type("application/json").send(body);
        };
        api.setErrorHandler((error, _request, reply) => answer(error, reply));
        api.setNotFoundHandler((request, reply) => answer(new NotFoundError(`Unknown route: ${request.method} ${request.url.split("?")[0]}`, null, "unknown_route"), reply));
    }, { prefix: "/api" });
}

import type { FastifyInstance } from "fastify";
import type { RouteContext } from "./routeContext.js";

/** Ollama's answer to `GET /` and `HEAD /` (its liveness probe). */
export const ollamaRunning = "Ollama is running";

/**
 * `GET /` and `HEAD /` as Ollama answers them, `Ollama is running` in text/plain, for the clients
 * that probe the root before they use `/api/*` (Open WebUI's connection check, the `ollama` CLI).
 * A browser asks for a page (`Accept: text/html`) and gets the web chat when it is served; any
 * other request (a client's probe, curl) gets Ollama's line.
 */
export function ollamaRootRoute(app: FastifyInstance, context: RouteContext): void {
    app.addHook("onRequest", async (request, reply) => {
        if ((request.method !== "GET" && request.method !== "HEAD") || request.url.split("?")[0] !== "/") return;
        if (context.config.webUi && (request.headers.accept ?? "").includes("text/html")) return;
        return reply.code(200).type("text/plain; charset=utf-8").send(ollamaRunning);
    });
}

import type { FastifyInstance } from "fastify";
import type { RouteContext } from "./routeContext.js";

/**
 * GET /metrics: Prometheus' text format. Behind the API key when one is set, unless
 * MAPLE_METRICS_PUBLIC=true (app.ts decides). Answers while the model loads, too.
 */
export function metricsRoute(app: FastifyInstance, context: RouteContext): void {
    app.get("/metrics", async (_request, reply) => {
        const text = await context.metrics.expose();
        return reply.type(context.metrics.contentType).send(text);
    });
}

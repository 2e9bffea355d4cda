import type { FastifyInstance } from "fastify";
import type { RouteContext } from "./routeContext.js";

/**
 * GET /livez, the liveness answer (Kubernetes' own name for it): 200 whenever the process can
 * answer, while the model loads and while the server drains too, so a liveness probe never
 * restarts a replica that is merely busy, loading or shutting down. 503 only after the model
 * failed to load, which a restart may cure. Open even with MAPLE_API_KEY, like /health.
 */
export function livezRoute(app: FastifyInstance, context: RouteContext): void {
    app.get("/livez", async (_request, reply) => {
        const failed = context.host.state.status === "failed";
        return reply.code(failed ? 503 : 200).send({ status: failed ? "error" : "alive", version: context.version });
    });
}

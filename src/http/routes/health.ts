import type { FastifyInstance } from "fastify";
import type { RouteContext } from "./routeContext.js";

/**
 * GET /health, the readiness answer: open even with MAPLE_API_KEY, so orchestrators and balancers
 * can probe it. 200 when the model is ready; 503 while it loads, after it failed, and while the
 * server drains on SIGTERM (requests are still served then, but a balancer should stop sending).
 */
export function healthRoute(app: FastifyInstance, context: RouteContext): void {
    app.get("/health", async (_request, reply) => {
        const state = context.host.state;
        // The response store's state: a shared store that is down refuses only what needs it (503 store_unavailable), so readiness stays 200.
        const common = { model: context.config.modelId, version: context.version, responses_store: context.responseStore.state };
        if (state.status === "loading") {
            return reply.code(503).send({ status: "loading", ...common, stage: state.stage, progress: state.progress ?? null });
        }
        if (state.status === "failed") {
            return reply.code(503).send({ status: "error", ...common, error: "the model failed to load; see the server log" });
        }
        const { engine, scheduler } = state;
        const draining = context.host.draining;
        if (draining !== undefined) {
            return reply.code(503).send({
                status: "draining", ...common, draining_seconds: (Date.now() - draining) / 1000,
                queue_depth: scheduler.queueDepth, active: scheduler.active
            });
        }
        return {
            status: "ok",
            ...common,
            model_path: state.source,
            device: engine.runtime.device,
            dtype: engine.model.dtype,
            attention: engine.runtime.attention,
            load_seconds: engine.runtime.loadSeconds,
            queue_depth: scheduler.queueDepth,
            active: scheduler.active,
            synthetic: engine.model.synthetic,
            architecture: engine.model.architecture,
            parameters: engine.model.parameterCount ?? null,
            context_size: engine.runtime.contextSize,
            kv_bytes_per_slot: engine.runtime.kvBytesPerSlot,
            slots: engine.runtime.slots,
            threads: engine.runtime.threads,
            engine: engine.runtime.engineVersion
        };
    });
}

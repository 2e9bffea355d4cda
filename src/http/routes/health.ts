import type { FastifyInstance } from "fastify";
import type { ModelEntry } from "../../core/modelRegistry.js";
import type { RouteContext } from "./routeContext.js";

/** One served model's line in /health: its state, and its load and queue when loaded. */
function modelHealth(entry: ModelEntry): Record<string, unknown> {
    const common = { id: entry.id, purpose: entry.purpose ?? null, pinned: entry.pinned, in_flight: entry.inFlight, memory_bytes: entry.memoryBytes };
    const state = entry.host.state;
    if (state.status === "loading") return { ...common, status: "loading", stage: state.stage, progress: state.progress ?? null };
    if (state.status === "failed") return { ...common, status: "error" };
    if (state.status === "unloaded") return { ...common, status: "unloaded" };
    if (entry.purpose === "embedding") return { ...common, status: "ok" };
    const chat = entry.chat.state;
    return chat.status === "ready" ? { ...common, status: "ok", queue_depth: chat.scheduler.queueDepth, active: chat.scheduler.active } : { ...common, status: "ok" };
}

/**
 * GET /health, the readiness answer: open even with MAPLE_API_KEY, so orchestrators and balancers
 * can probe it. 200 when the model is ready; 503 while it loads, after it failed, and while the
 * server drains on SIGTERM (requests are still served then, but a balancer should stop sending).
 */
export function healthRoute(app: FastifyInstance, context: RouteContext): void {
    app.get("/health", async (_request, reply) => {
        const state = context.host.state;
        // The response store's state: a shared store that is down refuses only what needs it (503 store_unavailable), so readiness stays 200.
        const common = { model: context.models.default.id, version: context.version, responses_store: context.responseStore.state, models: context.models.all.map(modelHealth) };
        // A default model for embeddings (or unloaded) has no slots to report.
        const embedding = context.models.default.purpose === "embedding" ? context.models.default.embedding.state : undefined;
        if (embedding?.status === "ready" || state.status === "unloaded") return { status: context.host.draining === undefined ? "ok" : "draining", ...common };
        if (embedding?.status === "failed") return reply.code(503).send({ status: "error", ...common, error: "the model failed to load; see the server log" });
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
            device_names: engine.runtime.deviceNames,
            gpu_layers: engine.runtime.gpuLayers,
            model_layers: engine.runtime.modelLayers,
            dtype: engine.model.dtype,
            attention: engine.runtime.attention,
            load_seconds: engine.runtime.loadSeconds,
            queue_depth: scheduler.queueDepth,
            active: scheduler.active,
            synthetic: engine.model.synthetic,
            architecture: engine.model.architecture,
            chat_format: state.chatTemplate.format.name,
            parameters: engine.model.parameterCount ?? null,
            context_size: engine.runtime.contextSize,
            kv_bytes_per_slot: engine.runtime.kvBytesPerSlot,
            slots: engine.runtime.slots,
            threads: engine.runtime.threads,
            engine: engine.runtime.engineVersion
        };
    });
}

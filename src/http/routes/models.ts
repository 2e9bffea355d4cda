import type { FastifyInstance } from "fastify";
import type { ModelEntry } from "../../core/modelRegistry.js";
import { NotFoundError } from "../../errors.js";
import type { RouteContext } from "./routeContext.js";

/** The spec: each model owned by deepgrove. */
const ownedBy = "deepgrove";

/**
 * GET /v1/models and GET /v1/models/{id}: every served model (the default first), whether it is
 * loaded, and what it is for. While the default model's start-up load runs, 503 model_loading
 * (as with one model); a model that is not loaded is listed without its context length.
 */
export function modelsRoute(app: FastifyInstance, context: RouteContext): void {
    const describe = (entry: ModelEntry): Record<string, unknown> => {
        const common = { id: entry.id, object: "model", created: context.createdAt, owned_by: ownedBy };
        const state = entry.host.state;
        const status = state.status === "ready" ? "loaded" : state.status;
        const extra = { loaded: state.status === "ready", status, purpose: entry.purpose ?? null };
        if (entry.purpose === "embedding") {
            const ready = entry.embedding.state;
            if (ready.status !== "ready") return { ...common, ...extra };
            return { ...common, max_model_len: ready.embedder.contextSize, dimensions: ready.embedder.dimensions, synthetic: ready.embedder.model.synthetic, ...extra };
        }
        const ready = entry.chat.state;
        if (ready.status !== "ready") return { ...common, ...extra };
        return {
            ...common,
            // llama-server and vLLM both report the context length here; clients such as Open WebUI read it.
            max_model_len: ready.engine.runtime.contextSize,
            // random weights (a synthetic model, e.g. the offline fallback): its answers mean nothing
            synthetic: ready.engine.model.synthetic,
            ...extra
        };
    };
    const list = (): Record<string, unknown>[] => {
        // The default model's start-up load (or its failure) answers as the one model did: 503 / 500.
        const first = context.models.default;
        if (first.host.state.status === "loading" || first.host.state.status === "failed") first.host.requireReady();
        return context.models.all.map(describe);
    };

    app.get("/v1/models", async () => ({ object: "list", data: list() }));

    app.get<{ Params: { id: string } }>("/v1/models/:id", async (request) => {
        const models = list();
        const model = models.find((described) => described["id"] === request.params.id);
        if (model === undefined) {
            throw new NotFoundError(`The model '${request.params.id}' does not exist; this server serves ${context.models.all.map((entry) => `'${entry.id}'`).join(", ")}.`,
                "model", "model_not_found");
        }
        return model;
    });
}

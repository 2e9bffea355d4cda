import type { FastifyInstance } from "fastify";
import { NotFoundError } from "../../errors.js";
import type { RouteContext } from "./routeContext.js";

/** The spec: one model, id MAPLE_MODEL_ID, owned by deepgrove. */
const ownedBy = "deepgrove";

/** GET /v1/models and GET /v1/models/{id}. */
export function modelsRoute(app: FastifyInstance, context: RouteContext): void {
    const describe = (): Record<string, unknown> => {
        const { engine } = context.host.requireReady();
        return {
            id: context.config.modelId,
            object: "model",
            created: context.createdAt,
            owned_by: ownedBy,
            // llama-server and vLLM both report the context length here; clients such as Open WebUI read it.
            max_model_len: engine.runtime.contextSize,
            // random weights (a synthetic model, e.g. the offline fallback): its answers mean nothing
            synthetic: engine.model.synthetic
        };
    };

    app.get("/v1/models", async () => ({ object: "list", data: [describe()] }));

    app.get<{ Params: { id: string } }>("/v1/models/:id", async (request) => {
        const model = describe();
        if (request.params.id !== context.config.modelId) {
            throw new NotFoundError(`The model '${request.params.id}' does not exist; this server serves '${context.config.modelId}'.`, "model", "model_not_found");
        }
        return model;
    });
}

import { stat } from "node:fs/promises";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { InvalidRequestError } from "../../errors.js";
import { ollamaErrorFormat } from "../../ollama/errorFormat.js";
import { listedModel, ollamaApiVersion, runningModel, showModel, type ServedModel } from "../../ollama/modelDescription.js";
import { parseWire } from "../../wire/index.js";
import type { RouteContext } from "./routeContext.js";

/** `/api/show`'s body: `model`, or the deprecated `name` the older clients send. */
const showWire = z.object({ model: z.string().nullish(), name: z.string().nullish(), verbose: z.boolean().nullish() }).passthrough();

/** GET /api/tags, POST /api/show, GET /api/ps, GET /api/version: the served model as Ollama describes a model. */
export function ollamaModelsRoute(app: FastifyInstance, context: RouteContext): void {
    const config = { errorFormat: ollamaErrorFormat };
    const served = async (): Promise<ServedModel> => {
        const ready = context.host.requireReady();
        const { engine } = ready;
        const modified = await stat(engine.model.path).then((stats) => stats.mtime, () => new Date(context.createdAt * 1000));
        return {
            id: context.config.modelId, model: engine.model, runtime: engine.runtime, chatTemplate: ready.chatTemplate,
            modifiedAt: modified.toISOString(), fingerprint: ready.systemFingerprint
        };
    };

    // Fastify answers HEAD on each GET, as Ollama does for /api/tags and /api/version.
    app.get("/api/tags", { config }, async () => ({ models: [listedModel(await served())] }));
    app.get("/api/ps", { config }, async () => ({ models: context.host.state.status === "ready" ? [runningModel(await served())] : [] }));
    app.get("/api/version", { config }, async () => ({ version: ollamaApiVersion, maple: context.version }));
    app.post("/api/show", { config }, async (request) => {
        const wire = parseWire(showWire, request.body);
        const name = wire.model ?? wire.name ?? undefined;
        if (name === undefined || name === "") throw new InvalidRequestError("model is required", "model");
        context.checkModel(name);
        return showModel(await served(), context.samplingDefaults);
    });
}

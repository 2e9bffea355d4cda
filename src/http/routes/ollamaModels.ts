import { stat } from "node:fs/promises";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { ModelEntry } from "../../core/modelRegistry.js";
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
    const served = async (entry: ModelEntry): Promise<ServedModel> => {
        const ready = context.models.readyChat(entry);
        const { engine } = ready;
        const modified = await stat(engine.model.path).then((stats) => stats.mtime, () => new Date(context.createdAt * 1000));
        return {
            id: entry.id, model: engine.model, runtime: engine.runtime, chatTemplate: ready.chatTemplate,
            modifiedAt: modified.toISOString(), fingerprint: ready.systemFingerprint
        };
    };
    /** The chat models loaded now, the default first (whose start-up load answers 503, as with one model). */
    const loadedChatModels = (): ModelEntry[] => {
        const first = context.models.default;
        if (first.purpose !== "embedding") first.chat.requireReady();
        return context.models.all.filter((entry) => entry.purpose === "chat" && entry.chat.state.status === "ready");
    };

    // Fastify answers HEAD on each GET, as Ollama does for /api/tags and /api/version.
    app.get("/api/tags", { config }, async () => ({ models: await Promise.all(loadedChatModels().map(async (entry) => listedModel(await served(entry)))) }));
    app.get("/api/ps", { config }, async () => ({
        models: await Promise.all(context.models.all.filter((entry) => entry.purpose === "chat" && entry.chat.state.status === "ready")
            .map(async (entry) => runningModel(await served(entry))))
    }));
    app.get("/api/version", { config }, async () => ({ version: ollamaApiVersion, maple: context.version }));
    app.post("/api/show", { config }, async (request) => {
        const wire = parseWire(showWire, request.body);
        const name = wire.model ?? wire.name ?? undefined;
        if (name === undefined || name === "") throw new InvalidRequestError("model is required", "model");
        context.checkModel(name);
        return showModel(await served(context.models.find(name) ?? context.models.default), context.samplingDefaults);
    });
}

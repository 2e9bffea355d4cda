import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { InvalidRequestError, MapleError, NotFoundError } from "../../errors.js";
import { toMapleError } from "../errorHandler.js";
import { isHuggingFaceSpec } from "../../models/huggingFace.js";
import { removeStoredModels } from "../../models/modelStore.js";
import { expandShortName } from "../../models/officialModels.js";
import { ModelSpecError, resolveModel, syntheticPrefix } from "../../models/resolveModel.js";
import { ollamaErrorBody, ollamaErrorFormat } from "../../ollama/errorFormat.js";
import { NdjsonStream } from "../../ollama/ndjsonStream.js";
import { PullProgress } from "../../ollama/pullProgress.js";
import { parseWire } from "../../wire/index.js";
import { requestCancellation } from "../requestSignal.js";
import type { RouteContext } from "./routeContext.js";

/** `model`, or the deprecated `name` (the `ollama` npm client still sends it). */
const namedWire = z.object({ model: z.string().nullish(), name: z.string().nullish(), stream: z.boolean().nullish() }).passthrough();

function modelNameOf(body: unknown): { spec: string; stream: boolean } {
    const wire = parseWire(namedWire, body);
    const name = wire.model ?? wire.name ?? "";
    if (name === "") throw new InvalidRequestError("model is required", "model");
    // Ollama's default tag: `maple-preview:latest` is `maple-preview`.
    return { spec: name.endsWith(":latest") ? name.slice(0, -":latest".length) : name, stream: wire.stream !== false };
}

/**
 * Only what is fetched or written into the models directory, as `maple pull` takes: a path would
 * let a client probe the server's files.
 */
function checkFetchable(spec: string): void {
    let fetchable: boolean;
    try {
        fetchable = isHuggingFaceSpec(spec) || spec.startsWith(syntheticPrefix) || expandShortName(spec) !== undefined;
    } catch (error) {
        throw pullError(error);
    }
    if (!fetchable) {
        throw new InvalidRequestError(`'${spec}' is not a model to fetch: expected maple-preview[:tq1], hf:owner/repo/file.gguf, hf:owner/repo:QUANT or synthetic:NAME.`, "model");
    }
}

/** A model that cannot be fetched is the request's fault (a wrong spec, a file the hub refuses), not a server error. */
function pullError(error: unknown): unknown {
    return error instanceof ModelSpecError ? new InvalidRequestError(error.message, "model") : error;
}

/**
 * POST /api/pull: Maple's own downloader (the specs `maple pull` takes: maple-preview[:tq1],
 * hf:owner/repo/file.gguf, hf:owner/repo:QUANT, synthetic:NAME) into the models directory, with
 * Ollama's progress objects. DELETE /api/delete removes like `maple rm`. Neither changes the model
 * this server serves: a pulled model is served by `maple serve --model SPEC`.
 */
export function ollamaModelFilesRoute(app: FastifyInstance, context: RouteContext): void {
    const config = { errorFormat: ollamaErrorFormat };
    app.post("/api/pull", { config }, async (request, reply) => {
        const { spec, stream } = modelNameOf(request.body);
        checkFetchable(spec);
        const cancellation = requestCancellation(request, reply, context.shutdownSignal);
        const progress = new PullProgress(spec);
        const pull = (onProgress?: Parameters<typeof resolveModel>[1]["onProgress"]): Promise<unknown> =>
            resolveModel(spec, { modelsDir: context.config.modelsDir, signal: cancellation.signal, onProgress });
        if (!stream) {
            await pull().catch((error: unknown) => { throw pullError(error); });
            return progress.finish()[0];
        }
        const ndjson = NdjsonStream.start(reply);
        // Progress arrives faster than a socket drains: objects are sent in order, without waiting on each.
        let sending = Promise.resolve();
        const send = (objects: unknown[]): void => {
            for (const object of objects) sending = sending.then(() => ndjson.send(object));
        };
        send(progress.start());
        try {
            await pull((work, done, total) => send(progress.update(work, done, total)));
            send(progress.finish());
        } catch (error) {
            if (!cancellation.clientGone.aborted) {
                const failure = pullError(error);
                if (!(failure instanceof MapleError)) request.log.error({ err: error }, "pull failed");
                send([ollamaErrorBody(toMapleError(failure))]);
            }
        } finally {
            await sending;
            ndjson.end();
        }
    });

    app.delete("/api/delete", { config }, async (request) => {
        const { spec } = modelNameOf(request.body);
        const removed = await removeStoredModels(context.config.modelsDir, spec);
        if (removed.length === 0) throw new NotFoundError(`model '${spec}' not found in ${context.config.modelsDir}`, "model");
        return {};
    });
}

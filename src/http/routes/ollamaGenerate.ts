import type { FastifyInstance } from "fastify";
import { startChatGeneration, startCompletionGeneration } from "../../core/index.js";
import { ollamaErrorFormat } from "../../ollama/errorFormat.js";
import { ollamaKeepAliveMs } from "../../ollama/keepAlive.js";
import { parseOllamaGenerateRequest } from "../../ollama/generateRequest.js";
import { answerGeneration } from "../../ollama/ndjsonStream.js";
import { loadedChunk, OllamaChunkWriter } from "../../ollama/responseChunks.js";
import { RequestTimings } from "../../ollama/timings.js";
import { requestCancellation } from "../requestSignal.js";
import type { RouteContext } from "./routeContext.js";

/** POST /api/generate: a prompt through the model's template (or `raw`, as it is), NDJSON by default. */
export function ollamaGenerateRoute(app: FastifyInstance, context: RouteContext): void {
    app.post("/api/generate", { config: { errorFormat: ollamaErrorFormat } }, async (request, reply) => {
        const timings = new RequestTimings();
        // First, so a client that leaves during any await below still cancels its request.
        const cancellation = requestCancellation(request, reply, context.shutdownSignal);
        const generate = parseOllamaGenerateRequest(request.body, request.headers, context.samplingDefaults);
        const { model, servedId } = await context.chatModel(reply, generate.model, cancellation.signal, ollamaKeepAliveMs(request.body));
        const identity = { model: generate.model, api: "generate" as const };
        if (generate.loadOnly) return loadedChunk(identity);
        const options = timings.observe({ ...context.generationOptions(request, cancellation.signal, servedId), promptParam: "prompt" });
        const generation = generate.raw
            ? await startCompletionGeneration(model, generate, options)
            : await startChatGeneration(model, generate, options);
        timings.started();
        return answerGeneration(request, reply, cancellation, generation, new OllamaChunkWriter(identity, timings), generate.stream);
    });
}

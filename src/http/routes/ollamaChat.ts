import type { FastifyInstance } from "fastify";
import { startChatGeneration } from "../../core/index.js";
import { ollamaErrorFormat } from "../../ollama/errorFormat.js";
import { ollamaKeepAliveMs } from "../../ollama/keepAlive.js";
import { parseOllamaChatRequest } from "../../ollama/chatRequest.js";
import { answerGeneration } from "../../ollama/ndjsonStream.js";
import { loadedChunk, OllamaChunkWriter } from "../../ollama/responseChunks.js";
import { RequestTimings } from "../../ollama/timings.js";
import { requestCancellation } from "../requestSignal.js";
import type { RouteContext } from "./routeContext.js";

/** POST /api/chat: Ollama's chat on the generation core, NDJSON by default, errors in Ollama's shape. */
export function ollamaChatRoute(app: FastifyInstance, context: RouteContext): void {
    app.post("/api/chat", { config: { errorFormat: ollamaErrorFormat } }, async (request, reply) => {
        const timings = new RequestTimings();
        // First, so a client that leaves during any await below still cancels its request.
        const cancellation = requestCancellation(request, reply, context.shutdownSignal);
        const chat = parseOllamaChatRequest(request.body, request.headers, context.samplingDefaults);
        const { model, servedId } = await context.chatModel(reply, chat.model, cancellation.signal, ollamaKeepAliveMs(request.body));
        const identity = { model: chat.model, api: "chat" as const };
        if (chat.loadOnly) return loadedChunk(identity);
        const generation = await startChatGeneration(model, chat,
            timings.observe(context.generationOptions(request, cancellation.signal, servedId)));
        timings.started();
        return answerGeneration(request, reply, cancellation, generation, new OllamaChunkWriter(identity, timings), chat.stream);
    });
}

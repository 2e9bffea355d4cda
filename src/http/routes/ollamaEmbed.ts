import type { FastifyInstance } from "fastify";
import { InvalidRequestError } from "../../errors.js";
import { parseOllamaEmbedRequest, parseOllamaLegacyEmbeddingRequest, type OllamaEmbedRequest } from "../../ollama/embedRequest.js";
import { ollamaErrorFormat } from "../../ollama/errorFormat.js";
import { ollamaKeepAliveMs } from "../../ollama/keepAlive.js";
import { requestCancellation } from "../requestSignal.js";
import type { RouteContext } from "./routeContext.js";

/** Nanoseconds since `startedAt` (a performance.now() reading), as Ollama's durations are. */
const nanosecondsSince = (startedAt: number): number => Math.round((performance.now() - startedAt) * 1e6);

function namedModel(body: unknown): string | undefined {
    const model = typeof body === "object" && body !== null ? (body as { model?: unknown }).model : undefined;
    return typeof model === "string" && model !== "" ? model : undefined;
}

/** POST /api/embed and the legacy /api/embeddings: Ollama's embeddings on a model served for embeddings. */
export function ollamaEmbedRoute(app: FastifyInstance, context: RouteContext): void {
    const config = { errorFormat: ollamaErrorFormat };
    /** The model first, so a chat model is told it computes no embeddings whatever the body's other fields. */
    const embed = async (body: unknown, parse: (body: unknown) => OllamaEmbedRequest, signal: AbortSignal, reply: Parameters<RouteContext["embeddingModel"]>[0]) => {
        const startedAt = performance.now();
        const named = namedModel(body);
        const parsed = named === undefined ? parse(body) : undefined;
        const { model } = await context.embeddingModel(reply, named ?? parsed?.model, signal, ollamaKeepAliveMs(body));
        const loadedAt = performance.now();
        const request = parsed ?? parse(body);
        const { embedder } = model;
        if (request.dimensions !== undefined && request.dimensions !== embedder.dimensions) {
            throw new InvalidRequestError(`model computes ${embedder.dimensions}-dimensional embeddings; dimensions ${request.dimensions} is not supported`, "dimensions");
        }
        // Room for the BOS/EOS tokens the model adds.
        const room = embedder.contextSize - 3;
        const inputs = request.inputs.map((text) => {
            if (!request.truncate) return text;
            const tokens = embedder.tokenize(text);
            return tokens.length > room ? tokens.slice(0, room) : text;
        });
        const embeddings = await embedder.embed(inputs, signal);
        return {
            model: request.model,
            embeddings,
            loadDuration: Math.round((loadedAt - startedAt) * 1e6),
            totalDuration: nanosecondsSince(startedAt),
            promptEvalCount: embeddings.reduce((sum, embedding) => sum + embedding.tokens, 0)
        };
    };

    app.post("/api/embed", { config }, async (request, reply) => {
        const cancellation = requestCancellation(request, reply, context.shutdownSignal);
        const result = await embed(request.body, parseOllamaEmbedRequest, cancellation.signal, reply);
        return {
            model: result.model,
            embeddings: result.embeddings.map((embedding) => embedding.vector),
            total_duration: result.totalDuration,
            load_duration: result.loadDuration,
            prompt_eval_count: result.promptEvalCount
        };
    });

    app.post("/api/embeddings", { config }, async (request, reply) => {
        const cancellation = requestCancellation(request, reply, context.shutdownSignal);
        const result = await embed(request.body, parseOllamaLegacyEmbeddingRequest, cancellation.signal, reply);
        return { embedding: result.embeddings[0]?.vector ?? [] };
    });
}

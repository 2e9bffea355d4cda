import type { FastifyInstance } from "fastify";
import { InvalidRequestError } from "../../errors.js";
import { base64Embedding, parseEmbeddingsRequest } from "../../openai/embeddingsRequest.js";
import { requestCancellation } from "../requestSignal.js";
import { checkEmbeddingTokens } from "./embeddingInputs.js";
import type { RouteContext } from "./routeContext.js";

/** POST /v1/embeddings (OpenAI's shape), on a model served for embeddings (see docs/models.md). */
export function embeddingsRoute(app: FastifyInstance, context: RouteContext): void {
    app.post("/v1/embeddings", async (request, reply) => {
        const cancellation = requestCancellation(request, reply, context.shutdownSignal);
        const parsed = parseEmbeddingsRequest(request.body);
        const { model, modelId } = await context.embeddingModel(reply, parsed.model, cancellation.signal);
        const { embedder } = model;
        // Qwen3-Embedding's Matryoshka truncation is not offered: only the model's own width.
        if (parsed.dimensions !== undefined && parsed.dimensions !== embedder.dimensions) {
            throw new InvalidRequestError(`The model '${modelId}' computes ${embedder.dimensions}-dimensional embeddings; 'dimensions' ${parsed.dimensions} is not supported.`,
                "dimensions", "unsupported_dimensions");
        }
        const inputs = parsed.inputs.map((input) => (typeof input === "string" ? input : checkEmbeddingTokens(embedder, input)));
        const embeddings = await embedder.embed(inputs, cancellation.signal);
        const promptTokens = embeddings.reduce((sum, embedding) => sum + embedding.tokens, 0);
        return {
            object: "list",
            data: embeddings.map((embedding, index) => ({
                object: "embedding", index, embedding: parsed.encodingFormat === "base64" ? base64Embedding(embedding.vector) : embedding.vector
            })),
            model: modelId,
            usage: { prompt_tokens: promptTokens, total_tokens: promptTokens }
        };
    });
}

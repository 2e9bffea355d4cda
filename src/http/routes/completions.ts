import type { FastifyInstance } from "fastify";
import { startCompletionGeneration } from "../../core/index.js";
import { CompletionBuilder, CompletionStream, type CompletionIdentity } from "../../openai/completionResponse.js";
import { parseCompletionRequest } from "../../openai/completionsRequest.js";
import { newId, unixSeconds } from "../../wire/ids.js";
import { foldGeneration, streamGeneration } from "../generationResponse.js";
import { requestCancellation } from "../requestSignal.js";
import type { RouteContext } from "./routeContext.js";

/** POST /v1/completions: the raw prompt to the model, no template, no parsing. */
export function completionsRoute(app: FastifyInstance, context: RouteContext): void {
    app.post("/v1/completions", async (request, reply) => {
        // First, so a client that leaves during any await below still cancels its request.
        const cancellation = requestCancellation(request, reply, context.shutdownSignal);
        const completion = parseCompletionRequest(request.body, request.headers, context.samplingDefaults);
        const { model, modelId, servedId } = await context.chatModel(reply, completion.model, cancellation.signal);
        const generation = await startCompletionGeneration(model, completion, context.generationOptions(request, cancellation.signal, servedId));
        const identity: CompletionIdentity = { id: newId("cmpl"), created: unixSeconds(), model: modelId, systemFingerprint: model.systemFingerprint };
        if (completion.stream) {
            return streamGeneration(request, reply, cancellation, generation, new CompletionStream(identity, completion.n, completion.includeUsage));
        }
        // The whole response is the fold of the stream's own chunks, its usage chunk included.
        return foldGeneration(generation, cancellation, new CompletionStream(identity, completion.n, true), new CompletionBuilder());
    });
}

import type { FastifyInstance } from "fastify";
import { startChatGeneration } from "../../core/index.js";
import { parseChatRequest } from "../../openai/chatRequest.js";
import { ChatCompletionBuilder, ChatCompletionStream, type ChatCompletionIdentity } from "../../openai/chatResponse.js";
import { newId, unixSeconds } from "../../wire/ids.js";
import { foldGeneration, streamGeneration } from "../generationResponse.js";
import { requestCancellation } from "../requestSignal.js";
import type { RouteContext } from "./routeContext.js";

/** POST /v1/chat/completions: the model's own template, the reasoning split, tool calls, streaming. */
export function chatCompletionsRoute(app: FastifyInstance, context: RouteContext): void {
    app.post("/v1/chat/completions", async (request, reply) => {
        // First, so a client that leaves during any await below still cancels its request.
        const cancellation = requestCancellation(request, reply, context.shutdownSignal);
        const chat = parseChatRequest(request.body, request.headers, context.samplingDefaults);
        const { model, modelId, servedId } = await context.chatModel(reply, chat.model, cancellation.signal);
        const generation = await startChatGeneration(model, chat, context.generationOptions(request, cancellation.signal, servedId));
        const identity: ChatCompletionIdentity = {
            id: newId("chatcmpl"), created: unixSeconds(), model: modelId,
            weightVersion: context.config.weightVersion, includeReasoning: chat.includeReasoning,
            systemFingerprint: model.systemFingerprint, includeUsage: chat.stream && chat.includeUsage
        };
        if (chat.stream) {
            return streamGeneration(request, reply, cancellation, generation, new ChatCompletionStream(identity, chat.n, chat.includeUsage));
        }
        // The whole response is the fold of the stream's own chunks, its usage chunk included.
        return foldGeneration(generation, cancellation, new ChatCompletionStream(identity, chat.n, true),
            new ChatCompletionBuilder({ withLogprobs: chat.logprobs !== undefined, includeReasoning: chat.includeReasoning }));
    });
}

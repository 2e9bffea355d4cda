import type { FastifyInstance } from "fastify";
import { anthropicErrorFormat } from "../../anthropic/errorFormat.js";
import { MessageBuilder, MessageEventWriter, newMessageId, pingEvent } from "../../anthropic/messageEvents.js";
import { parseMessagesRequest } from "../../anthropic/messagesRequest.js";
import { startChatGeneration, type GenerationPart } from "../../core/index.js";
import { foldGeneration, streamGeneration } from "../generationResponse.js";
import { requestCancellation } from "../requestSignal.js";
import type { RouteContext } from "./routeContext.js";

/** How often a stream whose prompt is still being evaluated says it is alive (Anthropic's `ping`). */
const pingIntervalMs = 5_000;

/** POST /v1/messages: Anthropic's Messages API on the generation core, errors in Anthropic's shape. */
export function messagesRoute(app: FastifyInstance, context: RouteContext): void {
    app.post("/v1/messages", { config: { errorFormat: anthropicErrorFormat } }, async (request, reply) => {
        // First, so a client that leaves during any await below still cancels its request.
        const cancellation = requestCancellation(request, reply, context.shutdownSignal);
        const messages = parseMessagesRequest(request.body, request.headers, context.samplingDefaults);
        const { model, modelId, servedId } = await context.chatModel(reply, messages.model, cancellation.signal);
        const generation = await startChatGeneration(model, messages, context.generationOptions(request, cancellation.signal, servedId));
        const writer = new MessageEventWriter({ id: newMessageId(), model: modelId, omitThinking: messages.omitThinking });
        // What the slot's cache holds is known once generation starts: message_delta has the final split.
        const start = writer.start({ promptTokens: generation.promptTokens, cachedTokens: 0 });
        const stream = {
            start: () => [...start, pingEvent()],
            part: (_choice: number, part: GenerationPart) => writer.part(part),
            end: () => [],
            keepAlive: { intervalMs: pingIntervalMs, events: () => [pingEvent()] }
        };
        if (messages.stream) return streamGeneration(request, reply, cancellation, generation, stream);
        // The whole message is the fold of the stream's own events (the pings fold to nothing).
        return foldGeneration(generation, cancellation, stream, new MessageBuilder());
    });
}

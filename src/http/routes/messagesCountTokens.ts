import type { FastifyInstance } from "fastify";
import { anthropicErrorFormat } from "../../anthropic/errorFormat.js";
import { parseMessagesPrompt } from "../../anthropic/messagesRequest.js";
import { countChatPromptTokens } from "../../core/index.js";
import type { RouteContext } from "./routeContext.js";

/**
 * POST /v1/messages/count_tokens: the prompt tokens the same /v1/messages request evaluates
 * (`input_tokens` + `cache_read_input_tokens` of its usage), the prompt limit not applied.
 */
export function messagesCountTokensRoute(app: FastifyInstance, context: RouteContext): void {
    app.post("/v1/messages/count_tokens", { config: { errorFormat: anthropicErrorFormat } }, async (request) => {
        const model = context.host.requireReady();
        const prompt = parseMessagesPrompt(request.body);
        context.checkModel(prompt.model);
        return { input_tokens: countChatPromptTokens(model, prompt) };
    });
}

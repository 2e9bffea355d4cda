import type { FastifyInstance } from "fastify";
import { parseTokenizeRequest } from "../../openai/tokenizeRequest.js";
import { checkPromptCharacters } from "../../core/promptChecks.js";
import { renderConversation } from "../../core/renderConversation.js";
import type { RouteContext } from "./routeContext.js";

/**
 * POST /tokenize (llama-server's and vLLM's route): text (`content` or `prompt`) or a conversation
 * (`messages`, rendered through the model's template) → `{tokens, count, max_model_len}`.
 */
export function tokenizeRoute(app: FastifyInstance, context: RouteContext): void {
    app.post("/tokenize", async (request) => {
        const { engine, chatTemplate } = context.host.requireReady();
        const tokenize = parseTokenizeRequest(request.body, context.samplingDefaults);
        context.checkModel(tokenize.model);
        const text = tokenize.input.type === "text" ? tokenize.input.text : renderConversation(chatTemplate, tokenize.input.chat, tokenize.input.addGenerationPrompt).text;
        checkPromptCharacters(text, engine.runtime.contextSize, tokenize.input.type === "text" ? "content" : "messages");
        const tokens = engine.tokenize(text, { specialTokens: tokenize.addSpecial, addBos: tokenize.addSpecial });
        return { tokens, count: tokens.length, max_model_len: engine.runtime.contextSize };
    });
}

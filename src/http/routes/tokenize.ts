import type { FastifyInstance } from "fastify";
import { buildChatPrompt, type ChatTemplateSource } from "../../chat/chatPrompt.js";
import { renderChatPrompt, TemplateRenderError } from "../../chat/template.js";
import { InvalidRequestError, ServerError } from "../../errors.js";
import { parseTokenizeRequest, type TokenizeInput } from "../../openai/tokenizeRequest.js";
import { checkPromptCharacters } from "../../openai/promptTokens.js";
import type { RouteContext } from "./routeContext.js";

/** The conversation as the model reads it; template errors map as in /v1/chat/completions. */
function renderConversation(source: ChatTemplateSource, input: Extract<TokenizeInput, { type: "chat" }>): string {
    try {
        // With the generation prompt this is exactly a chat request's prompt; without it, the same render minus that.
        if (input.addGenerationPrompt) return buildChatPrompt(source, input.chat).text;
        return renderChatPrompt({
            template: source.template, messages: input.chat.messages, tools: input.chat.tools, addGenerationPrompt: false,
            bosToken: source.bosToken, eosToken: source.eosToken, kwargs: input.chat.templateKwargs
        });
    } catch (error) {
        if (error instanceof TemplateRenderError && error.phase === "render") {
            throw new InvalidRequestError(`The chat template rejected this conversation: ${error.message}`, "messages");
        }
        throw new ServerError("The model's chat template could not be used.", error);
    }
}

/**
 * POST /tokenize (llama-server's and vLLM's route): text (`content` or `prompt`) or a conversation
 * (`messages`, rendered through the model's template) → `{tokens, count, max_model_len}`.
 */
export function tokenizeRoute(app: FastifyInstance, context: RouteContext): void {
    app.post("/tokenize", async (request) => {
        const { engine, chatTemplate } = context.host.requireReady();
        const tokenize = parseTokenizeRequest(request.body, context.samplingDefaults);
        context.checkModel(tokenize.model);
        const text = tokenize.input.type === "text" ? tokenize.input.text : renderConversation(chatTemplate, tokenize.input);
        checkPromptCharacters(text, engine.runtime.contextSize, tokenize.input.type === "text" ? "content" : "messages");
        const tokens = engine.tokenize(text, { specialTokens: tokenize.addSpecial, addBos: tokenize.addSpecial });
        return { tokens, count: tokens.length, max_model_len: engine.runtime.contextSize };
    });
}

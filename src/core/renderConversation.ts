import { buildChatPrompt, type ChatPrompt, type ChatPromptRequest, type ChatTemplateSource } from "../chatFormat/chatPrompt.js";
import { TemplateRenderError } from "../chatFormat/template.js";
import { InvalidRequestError, ServerError } from "../errors.js";

/**
 * Renders a request's conversation through the model's template. A template that raises on this
 * conversation is the request's fault (an invalid request naming `param`, with the template's
 * message); one that does not parse is Maple's (a server error).
 */
export function renderConversation(source: ChatTemplateSource, request: ChatPromptRequest, addGenerationPrompt = true, param = "messages"): ChatPrompt {
    try {
        return buildChatPrompt(source, request, addGenerationPrompt);
    } catch (error) {
        if (error instanceof TemplateRenderError && error.phase === "render") {
            throw new InvalidRequestError(`The chat template rejected this conversation: ${error.message}`, param);
        }
        throw new ServerError("The model's chat template could not be used.", error);
    }
}

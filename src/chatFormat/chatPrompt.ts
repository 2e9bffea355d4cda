import { promptEndsInsideThink, renderChatPrompt } from "./template.js";
import type { ChatMessage, ToolDefinition } from "./types.js";

export interface ChatTemplateSource {
    template: string;
    bosToken: string;
    eosToken: string;
}

export interface ChatPromptRequest {
    messages: ChatMessage[];
    tools: ToolDefinition[];
    templateKwargs: Record<string, unknown>;
}

export interface ChatPrompt {
    text: string;
    /** The prompt leaves the model inside an open `<think>` (Maple's template): output starts as reasoning. */
    startsInReasoning: boolean;
    /** Tools were shown to the model, so `<tool_call>` blocks in the answer are calls. */
    parseToolCalls: boolean;
}

/** Renders the conversation through the model's own template and reads how its output will start. */
export function buildChatPrompt(source: ChatTemplateSource, request: ChatPromptRequest, addGenerationPrompt = true): ChatPrompt {
    const text = renderChatPrompt({
        template: source.template,
        messages: request.messages,
        tools: request.tools,
        addGenerationPrompt,
        bosToken: source.bosToken,
        eosToken: source.eosToken,
        kwargs: request.templateKwargs
    });
    return { text, startsInReasoning: promptEndsInsideThink(text), parseToolCalls: request.tools.length > 0 };
}

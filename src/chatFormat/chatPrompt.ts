import type { ChatFormat } from "./formats/chatFormat.js";
import { renderChatPrompt } from "./template.js";
import type { ChatMessage, ReasoningSwitch, ToolDefinition } from "./types.js";

/** The model's chat template, its special tokens' text, and its family's chat format. */
export interface ChatTemplateSource {
    template: string;
    bosToken: string;
    eosToken: string;
    /** How the model writes reasoning and tool calls (detected from the template, or `--chat-format`). */
    format: ChatFormat;
}

export interface ChatPromptRequest {
    messages: ChatMessage[];
    tools: ToolDefinition[];
    /** Template variables (`chat_template_kwargs`); they win over the reasoning switch's. */
    templateKwargs: Record<string, unknown>;
    /** Reason or not, and how hard; undefined: the template's default. The format turns it into its template's variables. */
    reasoning: ReasoningSwitch | undefined;
}

export interface ChatPrompt {
    text: string;
    /** The model's chat format, which parses the output and writes the answer's grammar. */
    format: ChatFormat;
    /** The prompt leaves the model inside its reasoning block (Maple's template opens `<think>`): output starts as reasoning. */
    startsInReasoning: boolean;
    /** The model may still open its reasoning block itself (see `PromptStart`). */
    mayOpenReasoning: boolean;
    /** The tools shown to the model: their calls in the answer are parsed (none: the family's tool syntax is content). */
    tools: readonly ToolDefinition[];
}

/** Renders the conversation through the model's own template and reads how its output will start. */
export function buildChatPrompt(source: ChatTemplateSource, request: ChatPromptRequest, addGenerationPrompt = true): ChatPrompt {
    const { format } = source;
    const text = renderChatPrompt({
        template: source.template,
        messages: request.messages,
        tools: request.tools,
        addGenerationPrompt,
        bosToken: source.bosToken,
        eosToken: source.eosToken,
        kwargs: { ...format.reasoningVariables(request.reasoning), ...request.templateKwargs },
        templateMessages: format.templateMessages,
        templateTools: format.templateTools
    });
    return { text, format, ...format.readPrompt(text), tools: request.tools };
}

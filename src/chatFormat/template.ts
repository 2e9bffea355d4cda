import { Template } from "@huggingface/jinja";
import { toTemplateMessages, toTemplateTools, type TemplateMessage, type TemplateTool } from "./templateMessages.js";
import { chatMlTemplate } from "./templates/chatml.js";
import type { ChatMessage, ToolDefinition } from "./types.js";

/** What `renderChatPrompt` needs: the model's template and one request's conversation. */
export interface RenderChatOptions {
    /** The GGUF's `tokenizer.chat_template`, or `chatMlFallbackTemplate` when it has none. */
    template: string;
    messages: ChatMessage[];
    /** Tools offered to the model. Absent or empty: `tools` is not passed, so `{% if tools %}` is false. */
    tools?: ToolDefinition[];
    /** Append the opening of the assistant turn (true for chat completions). */
    addGenerationPrompt: boolean;
    /** The model's BOS token text, `""` when it has none. Exposed to the template as `bos_token`. */
    bosToken: string;
    /** The model's EOS token text. Exposed to the template as `eos_token`. */
    eosToken: string;
    /**
     * The request's `chat_template_kwargs`: every key becomes a template variable
     * (`enable_thinking`, …). The variables Maple sets itself (`messages`, `tools`,
     * `add_generation_prompt`, `bos_token`, `eos_token`) win over a key of the same name.
     */
    kwargs?: Record<string, unknown>;
    /**
     * The messages as the model family's template reads them (`ChatFormat.templateMessages`).
     * Default: the OpenAI / Transformers dicts of `toTemplateMessages`.
     */
    templateMessages?: (messages: readonly ChatMessage[], template: string, tools: readonly ToolDefinition[]) => TemplateMessage[];
    /** The tools as the family's template reads them (`ChatFormat.templateTools`). Default: `toTemplateTools`. */
    templateTools?: (tools: readonly ToolDefinition[]) => TemplateTool[];
}

/**
 * The template for models without one: ChatML, with tools the Hermes way
 * (`<tool_call>{json}</tool_call>`, which the output parser reads). No think block.
 */
export const chatMlFallbackTemplate: string = chatMlTemplate;

/**
 * The template failed: it raised (`raise_exception("…")`, typically a conversation the model's
 * template rejects, such as roles that do not alternate) or could not be parsed. `message` is the
 * template's own message.
 */
export class TemplateRenderError extends Error {
    override name = "TemplateRenderError";
    /**
     * `"parse"`: the template itself is broken (a server-side problem, whatever the request).
     * `"render"`: it raised on this conversation (usually the request's fault).
     */
    readonly phase: "parse" | "render";

    constructor(message: string, phase: "parse" | "render" = "render", options?: { cause?: unknown }) {
        super(message, options);
        this.phase = phase;
    }
}

/**
 * Renders a conversation into the prompt text with the model's own Jinja chat template
 * (`@huggingface/jinja`, which provides `raise_exception`, `strftime_now` and `namespace`, with
 * Transformers' `trim_blocks` / `lstrip_blocks`). Parsed templates are cached per template text.
 *
 * @throws TemplateRenderError when the template does not parse or raises.
 */
export function renderChatPrompt(options: RenderChatOptions): string {
    const template = parsedTemplate(options.template);
    const variables: Record<string, unknown> = {
        ...options.kwargs,
        messages: options.templateMessages?.(options.messages, options.template, options.tools ?? []) ?? toTemplateMessages(options.messages, options.template.includes("developer")),
        add_generation_prompt: options.addGenerationPrompt,
        bos_token: options.bosToken,
        eos_token: options.eosToken
    };
    if (options.tools !== undefined && options.tools.length > 0) variables["tools"] = (options.templateTools ?? toTemplateTools)(options.tools);
    else delete variables["tools"];
    try {
        return template.render(variables);
    } catch (error) {
        throw new TemplateRenderError(errorMessage(error), "render", { cause: error });
    }
}

const parsedTemplates = new Map<string, Template>();

function parsedTemplate(text: string): Template {
    let template = parsedTemplates.get(text);
    if (template === undefined) {
        try {
            template = new Template(text);
        } catch (error) {
            throw new TemplateRenderError(errorMessage(error), "parse", { cause: error });
        }
        parsedTemplates.set(text, template);
    }
    return template;
}

function errorMessage(error: unknown): string {
    return error instanceof Error ? error.message : String(error);
}

import { renderChatPrompt } from "./template.js";
import type { ChatMessage, ToolDefinition } from "./types.js";

/**
 * What a chat template shows the model, found by rendering it with probes and looking for their
 * text in the output, as minja's capability detection does (`chat_template` in llama.cpp's
 * vendored minja, before its jinja rewrite): a tool named `some_tool`, a system message's needle.
 * Reading the template's source instead (`tools` in it?) would be fooled by templates that
 * mention tools only to ignore them, or render them under another name.
 */
export interface TemplateCapabilities {
    /** The template renders the offered tools (their names reach the prompt). */
    rendersTools: boolean;
    /** The template renders a system message (Gemma 2's raises on one; Gemma 3's folds it into the first user turn). */
    rendersSystem: boolean;
}

const userNeedle = "<User Needle>";
const systemNeedle = "<System Needle>";
const probeTool: ToolDefinition = {
    name: "some_tool",
    description: "Some tool.",
    parameters: { type: "object", properties: { arg: { type: "string", description: "Some argument." } }, required: ["arg"] }
};

const known = new Map<string, TemplateCapabilities>();

/**
 * The template's capabilities (cached per template text). A probe the template raises on, or
 * cannot parse, counts as "not rendered", as in minja.
 */
export function templateCapabilities(template: string): TemplateCapabilities {
    let capabilities = known.get(template);
    if (capabilities === undefined) {
        const user: ChatMessage = { role: "user", content: userNeedle };
        capabilities = {
            rendersTools: probe(template, [user], [probeTool]).includes(probeTool.name),
            rendersSystem: probe(template, [{ role: "system", content: systemNeedle }, user], []).includes(systemNeedle)
        };
        known.set(template, capabilities);
    }
    return capabilities;
}

function probe(template: string, messages: ChatMessage[], tools: ToolDefinition[]): string {
    try {
        return renderChatPrompt({ template, messages, tools, addGenerationPrompt: false, bosToken: "", eosToken: "" });
    } catch {
        return "";
    }
}

import { buildChatPrompt, type ChatTemplateSource, type ChatPromptRequest } from "./chatPrompt.js";

/**
 * Where a chat prompt's stable preamble ends, in characters: the system and developer messages
 * and the tool definitions before the first user turn, which every session of one agent kind
 * starts with (Claude Code's system prompt and tools, which its `cache_control` breakpoints mark;
 * Codex's developer instructions; an Agents SDK agent's instructions). The prompt cache saves the
 * state there, so a new session restores it (docs/prompt-cache.md, *Shared-prefix states*).
 *
 * Found from the model's own template: the leading system messages are rendered with two
 * different user messages, and the preamble is what both renders and the prompt share (it ends
 * where the first user message's text begins, e.g. after `<|im_start|>user\n`). Undefined when
 * the conversation has no leading system message nor tools, or the template will not render it.
 */
export function preambleCharacters(source: ChatTemplateSource, request: ChatPromptRequest, prompt: string): number | undefined {
    const leading = request.messages.findIndex((message) => message.role !== "system" && message.role !== "developer");
    const system = request.messages.slice(0, leading === -1 ? request.messages.length : leading);
    if (system.length === 0 && request.tools.length === 0) return undefined;
    let renders: string[];
    try {
        renders = placeholders.map((content) => buildChatPrompt(source, { ...request, messages: [...system, { role: "user", content }] }).text);
    } catch {
        return undefined;
    }
    const shared = Math.min(commonPrefixLength(renders[0]!, renders[1]!), commonPrefixLength(renders[0]!, prompt));
    return shared > 0 ? shared : undefined;
}

/** Two user messages that share no first character (a template may trim whitespace). */
const placeholders = ["Maple", "Oak"] as const;

function commonPrefixLength(a: string, b: string): number {
    const limit = Math.min(a.length, b.length);
    let shared = 0;
    while (shared < limit && a.charCodeAt(shared) === b.charCodeAt(shared)) shared += 1;
    return shared;
}

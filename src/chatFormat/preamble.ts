import { LruCache } from "../lruCache.js";
import { buildChatPrompt, type ChatTemplateSource, type ChatPromptRequest } from "./chatPrompt.js";

/**
 * Where a chat prompt's stable preamble ends, in characters: the system and developer messages
 * and the tool definitions before the first user turn, which every session of one agent kind
 * starts with (Claude Code's system prompt and tools, which its `cache_control` breakpoints mark;
 * Codex's developer instructions; an Agents SDK agent's instructions). The prompt cache saves the
 * state there, so a new session restores it (docs/prompt-cache-design.md, *Shared-prefix states*).
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
    const render = preambleRender(source, { ...request, messages: system });
    if (render === undefined) return undefined;
    const shared = Math.min(render.placeholdersShare, commonPrefixLength(render.text, prompt));
    return shared > 0 ? shared : undefined;
}

/** The leading messages rendered with the first placeholder, and how many characters the two placeholders' renders share. */
interface PreambleRender {
    text: string;
    placeholdersShare: number;
}

/**
 * Preamble renders by template, then by preamble: every session of an agent kind sends the same
 * one, and its two renders (each a full pass of the Jinja template over the system prompt and
 * the tools' JSON) were the dearest part of a chat request's set-up on the event loop.
 */
const preambleRenders = new WeakMap<ChatTemplateSource, LruCache<string, PreambleRender | null>>();
const preamblesPerTemplate = 64;

/** `request.messages` is the preamble's messages; undefined when the template will not render it. */
function preambleRender(source: ChatTemplateSource, request: ChatPromptRequest): PreambleRender | undefined {
    let renders = preambleRenders.get(source);
    if (renders === undefined) preambleRenders.set(source, renders = new LruCache(preamblesPerTemplate));
    const key = JSON.stringify([request.messages, request.tools, request.templateKwargs, request.reasoning]);
    let render = renders.get(key);
    if (render === undefined) {
        try {
            const [first, second] = placeholders.map((content) => buildChatPrompt(source, { ...request, messages: [...request.messages, { role: "user", content }] }).text);
            render = { text: first!, placeholdersShare: commonPrefixLength(first!, second!) };
        } catch {
            render = null;
        }
        renders.set(key, render);
    }
    return render ?? undefined;
}

/** Two user messages that share no first character (a template may trim whitespace). */
const placeholders = ["Maple", "Oak"] as const;

function commonPrefixLength(a: string, b: string): number {
    const limit = Math.min(a.length, b.length);
    let shared = 0;
    while (shared < limit && a.charCodeAt(shared) === b.charCodeAt(shared)) shared += 1;
    return shared;
}

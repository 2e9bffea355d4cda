import { buildChatPrompt, type ChatTemplateSource, type ChatPromptRequest } from "./chatPrompt.js";

/**
 * How much of a chat prompt the conversation's next request will repeat, in characters: the
 * prompt rendered again as that request renders it (this turn's answer, then the user's next
 * message) is compared with it. The template renders a past answer otherwise than the opening it
 * generated after (Qwen3 and Maple drop the pre-filled `<think>` and the reasoning), so the next
 * prompt leaves this one a few tokens before its end: after `<|im_start|>assistant\n`, where the
 * answer's text begins.
 *
 * A slot of a sliding-window model is saved at that point (its saved state serves only a prompt
 * that repeats all of it): returns undefined when the template will not render that conversation
 * (it ends with an assistant turn being continued, or a template rejects the order), and the
 * caller falls back to a fixed offset.
 */
export function nextTurnSharedCharacters(source: ChatTemplateSource, request: ChatPromptRequest, prompt: string): number | undefined {
    if (request.messages.at(-1)?.role === "assistant") return undefined;
    let next: string;
    try {
        next = buildChatPrompt(source, {
            ...request,
            messages: [...request.messages, { role: "assistant", content: answerPlaceholder }, { role: "user", content: answerPlaceholder }]
        }).text;
    } catch {
        return undefined;
    }
    let shared = 0;
    const limit = Math.min(prompt.length, next.length);
    while (shared < limit && prompt.charCodeAt(shared) === next.charCodeAt(shared)) shared += 1;
    return shared;
}

/** Text no generation prompt starts with (a template trims whitespace, and may open a think block). */
const answerPlaceholder = "Maple";

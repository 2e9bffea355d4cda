import { buildChatPrompt, type ChatTemplateSource, type ChatPromptRequest } from "./chatPrompt.js";
import type { ChatMessage } from "./types.js";

/**
 * How much of a chat prompt the conversation's next request will repeat, in characters: the
 * prompt rendered again as that request renders it (this turn's answer, then the user's next
 * message) is compared with it. The template renders a past answer otherwise than the opening it
 * generated after (Qwen3 and Maple drop the pre-filled `<think>` and the reasoning), so the next
 * prompt leaves this one a few tokens before its end: after `<|im_start|>assistant\n`, where the
 * answer's text begins.
 *
 * `next: "toolResult"` renders the next request of a tool loop instead: this turn's answer calls a
 * tool and its result follows. Templates show a loop's reasoning only until the next user message
 * (Qwen3's and Maple's), so inside a loop the two differ: a user message leaves the prompt where
 * the loop's first answer begins, a tool result near its end.
 *
 * A slot of a sliding-window model is saved at that point (its saved state serves only a prompt
 * that repeats all of it): returns undefined when the template will not render that conversation
 * (it ends with an assistant turn being continued, or a template rejects the order), and the
 * caller falls back to a fixed offset. The point is in characters, and may fall inside a token
 * (`<t` of `<think>`): the caller counts only the tokens wholly before it.
 */
export function nextTurnSharedCharacters(source: ChatTemplateSource, request: ChatPromptRequest, prompt: string,
    next: "user" | "toolResult" = "user"): number | undefined {
    if (request.messages.at(-1)?.role === "assistant") return undefined;
    let rendered: string;
    try {
        rendered = buildChatPrompt(source, { ...request, messages: [...request.messages, ...nextMessages[next]] }).text;
    } catch {
        return undefined;
    }
    let shared = 0;
    const limit = Math.min(prompt.length, rendered.length);
    while (shared < limit && prompt.charCodeAt(shared) === rendered.charCodeAt(shared)) shared += 1;
    return shared;
}

/** Text no generation prompt starts with (a template trims whitespace, and may open a think block). */
const answerPlaceholder = "Maple";

/** The messages after this turn's prompt: the answer, then what the next request adds. */
const nextMessages: Record<"user" | "toolResult", ChatMessage[]> = {
    user: [{ role: "assistant", content: answerPlaceholder }, { role: "user", content: answerPlaceholder }],
    toolResult: [
        { role: "assistant", content: answerPlaceholder, toolCalls: [{ id: "call_maple", name: "maple", arguments: "{}" }] },
        { role: "tool", content: answerPlaceholder, toolCallId: "call_maple" }
    ]
};

import type { ChatCompletionTokenLogprob } from "openai/resources/chat/completions";
import type { CompletionChoice } from "openai/resources/completions";
import type { TokenLogprobs } from "../core/index.js";

/** One entry of chat's `logprobs.content` (OpenAI's shape). */
export type WireChatLogprob = ChatCompletionTokenLogprob;

/** Chat's `choices[].logprobs` for the given entries; `refusal` is always null (Maple never refuses). */
export function chatLogprobs(content: WireChatLogprob[]): { content: WireChatLogprob[]; refusal: null } {
    return { content, refusal: null };
}

/** A generated token in chat's shape; `top_logprobs` is `[]` when `top_logprobs` was 0. */
export function toChatLogprob(token: TokenLogprobs): WireChatLogprob {
    return {
        token: token.text,
        logprob: token.logprob,
        bytes: token.bytes,
        top_logprobs: token.top.map((alternative) => ({ token: alternative.text, logprob: alternative.logprob, bytes: alternative.bytes }))
    } satisfies WireChatLogprob;
}

/** `/v1/completions`' `choices[].logprobs` (the legacy shape; every field the SDK's optional ones). */
export interface WireCompletionLogprobs extends Required<CompletionChoice.Logprobs> {
    tokens: string[];
    token_logprobs: number[];
    /** One object per token: the `logprobs` most likely tokens' text → logprob (tokens of the same text share a key). */
    top_logprobs: Record<string, number>[];
    /** Where each token starts in the completion's text, in characters (code points, as vLLM counts them). */
    text_offset: number[];
}

/**
 * Collects `/v1/completions` logprobs token by token; `take()` returns the ones added since the
 * last call (a streamed chunk carries its own tokens), with offsets that continue across chunks.
 */
export class CompletionLogprobs {
    private pending: WireCompletionLogprobs = emptyCompletionLogprobs();
    private offset = 0;

    add(token: TokenLogprobs): void {
        const text = token.text;
        this.pending.tokens.push(text);
        this.pending.token_logprobs.push(token.logprob);
        // No prototype: a token's text may be "constructor" or "__proto__".
        const top = Object.create(null) as Record<string, number>;
        for (const alternative of token.top) {
            const key = alternative.text;
            // Most likely first: a later token of the same text does not overwrite it.
            if (!Object.hasOwn(top, key)) top[key] = alternative.logprob;
        }
        this.pending.top_logprobs.push(top);
        this.pending.text_offset.push(this.offset);
        this.offset += [...text].length;
    }

    /** The tokens added since the last call, or null when there are none. */
    take(): WireCompletionLogprobs | null {
        if (this.pending.tokens.length === 0) return null;
        const taken = this.pending;
        this.pending = emptyCompletionLogprobs();
        return taken;
    }
}

function emptyCompletionLogprobs(): WireCompletionLogprobs {
    return { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
}

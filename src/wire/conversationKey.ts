import { createHash } from "node:crypto";

/** Longer keys are hashed: a key only has to tell conversations apart. */
const maxKeyLength = 128;

/** An HTTP request's headers as Node gives them (lower-case names). */
export type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/**
 * What names the conversation in a wire request: OpenAI's `prompt_cache_key`, its `user` (or
 * Anthropic's `metadata.user_id`, the same thing: one client's id keys its conversations on
 * either API). Values that are not a non-empty string are ignored.
 */
export interface ConversationKeyFields {
    promptCacheKey?: unknown;
    user?: unknown;
}

/**
 * The conversation a request continues, as a key for slot and prompt-cache affinity:
 * `prompt_cache_key`, else `user`, else an `X-Session-Id` header. Each source has its own
 * namespace, so a user name never matches a session id by accident. A hint only: requests with
 * the same key are still served from the tokens they actually share.
 */
export function conversationKey(fields: ConversationKeyFields, headers: RequestHeaders): string | undefined {
    const header = headers["x-session-id"];
    const candidates: [string, unknown][] = [
        ["prompt_cache_key", fields.promptCacheKey],
        ["user", fields.user],
        ["session", Array.isArray(header) ? header[0] : header]
    ];
    for (const [source, value] of candidates) {
        if (typeof value !== "string" || value === "") continue;
        const key = `${source}:${value}`;
        return key.length <= maxKeyLength ? key : `${source}#${createHash("sha256").update(value).digest("hex")}`;
    }
    return undefined;
}

import { createHash } from "node:crypto";

/** Longer keys are hashed: a key only has to tell conversations apart. */
const maxKeyLength = 128;

/**
 * The conversation a request continues, as a key for slot and prompt-cache affinity: OpenAI's
 * `prompt_cache_key` request field, else its `user` field, else an `X-Session-Id` header. Each
 * source has its own namespace, so a user name never matches a session id by accident. A hint
 * only: requests with the same key are still served from the tokens they actually share.
 */
export function conversationCacheKey(body: unknown, headers: Readonly<Record<string, string | string[] | undefined>>): string | undefined {
    const fields = typeof body === "object" && body !== null ? body as Record<string, unknown> : {};
    const header = headers["x-session-id"];
    const candidates: [string, unknown][] = [
        ["prompt_cache_key", fields.prompt_cache_key],
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

/**
 * The same for Anthropic's Messages API: its `metadata.user_id` stands for OpenAI's `user` (same
 * namespace: one client's id keys its conversations on either API), else an `X-Session-Id` header.
 */
export function anthropicCacheKey(body: unknown, headers: Readonly<Record<string, string | string[] | undefined>>): string | undefined {
    const metadata = typeof body === "object" && body !== null ? (body as Record<string, unknown>).metadata : undefined;
    const userId = typeof metadata === "object" && metadata !== null ? (metadata as Record<string, unknown>).user_id : undefined;
    return conversationCacheKey({ user: userId }, headers);
}

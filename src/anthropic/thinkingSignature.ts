import { deflateRawSync, inflateRawSync } from "node:zlib";

/**
 * The `signature` of a thinking block Maple wrote: the thinking text itself, deflated and
 * base64-encoded behind a `maple1.` prefix. It is not a secret nor a check (a client can send any
 * thinking text back anyway): it lets a client that does not show the thinking (Claude Code's
 * `thinking.display: "omitted"`, which gets `"thinking": ""`) still send the model's reasoning
 * back in the next turn, so the template renders the same reasoning and the slot's cached prefix
 * still matches.
 */
const prefix = "maple1.";

export function thinkingSignature(thinking: string): string {
    return prefix + deflateRawSync(Buffer.from(thinking, "utf8")).toString("base64");
}

/**
 * The thinking text a signature (or a `redacted_thinking` block's `data`) carries, or undefined
 * when it is not one of Maple's (e.g. a signature from Anthropic's API: the block's own text is
 * used then).
 */
export function thinkingFromSignature(signature: string): string | undefined {
    if (!signature.startsWith(prefix)) return undefined;
    try {
        return inflateRawSync(Buffer.from(signature.slice(prefix.length), "base64")).toString("utf8");
    } catch {
        return undefined;
    }
}

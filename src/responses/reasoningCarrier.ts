/**
 * The form `include: ["reasoning.encrypted_content"]` returns reasoning in. OpenAI's is an
 * opaque encrypted blob only its servers read; Maple has no secret to keep, so its
 * `encrypted_content` is the trace itself, base64 of `{"maple_reasoning": 1, "text": …}`: a client
 * that keeps no state (Codex, `store: false`) sends it back and the next turn's template sees the
 * reasoning again. A blob that is not Maple's (another server's) decodes to undefined and is skipped.
 */
const marker = "maple_reasoning";

export function encodeReasoning(text: string): string {
    return Buffer.from(JSON.stringify({ [marker]: 1, text }), "utf8").toString("base64");
}

export function decodeReasoning(encrypted: string): string | undefined {
    try {
        const value = JSON.parse(Buffer.from(encrypted, "base64").toString("utf8")) as Record<string, unknown>;
        return value[marker] === 1 && typeof value["text"] === "string" ? value["text"] : undefined;
    } catch {
        return undefined;
    }
}

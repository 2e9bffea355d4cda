import { createHash, timingSafeEqual } from "node:crypto";
import { AuthenticationError } from "../errors.js";

function digest(text: string): Buffer {
    return createHash("sha256").update(text).digest();
}

/**
 * Checks `Authorization: Bearer <key>`, or `X-Api-Key: <key>` (Anthropic's clients) when no
 * Authorization header is sent, in constant time: both sides are hashed first so neither the
 * key's length nor its content leaks through timing.
 */
export function createBearerCheck(apiKey: string): (authorization: string | undefined, xApiKey?: string | string[]) => void {
    const expected = digest(apiKey);
    return (authorization, xApiKey) => {
        const key = authorization === undefined && typeof xApiKey === "string"
            ? xApiKey.trim() : /^Bearer\s+(.+)$/i.exec(authorization?.trim() ?? "")?.[1]?.trim();
        const presented = digest(key ?? "");
        if (!timingSafeEqual(presented, expected) || key === undefined) throw new AuthenticationError();
    };
}

import { createHash, timingSafeEqual } from "node:crypto";
import { AuthenticationError } from "../errors.js";

function digest(text: string): Buffer {
    return createHash("sha256").update(text).digest();
}

/**
 * Checks `Authorization: Bearer <key>` in constant time: both sides are hashed first so neither
 * the key's length nor its content leaks through timing.
 */
export function createBearerCheck(apiKey: string): (authorization: string | undefined) => void {
    const expected = digest(apiKey);
    return (authorization) => {
        const match = /^Bearer\s+(.+)$/i.exec(authorization?.trim() ?? "");
        const presented = digest(match?.[1]?.trim() ?? "");
        if (!timingSafeEqual(presented, expected) || match === null) throw new AuthenticationError();
    };
}

import type { IncomingHttpHeaders } from "node:http";
import { createHash, timingSafeEqual } from "node:crypto";
import { AuthenticationError } from "../errors.js";

function digest(text: string): Buffer {
    return createHash("sha256").update(text).digest();
}

/**
 * Checks the API key in constant time, as `Authorization: Bearer <key>` or as `X-Api-Key: <key>`
 * (Anthropic's header, which several gateways use too): both sides are hashed first so neither
 * the key's length nor its content leaks through timing. Either header carrying the key is
 * enough, so a client that sends both, one of them stale, still gets in.
 */
export function createApiKeyCheck(apiKey: string): (headers: IncomingHttpHeaders) => void {
    const expected = digest(apiKey);
    const matches = (presented: string | undefined): boolean => {
        // Both digests are compared even when nothing was presented: the time does not depend on it.
        const equal = timingSafeEqual(digest(presented ?? ""), expected);
        return equal && presented !== undefined && presented.length > 0;
    };
    return (headers) => {
        const bearer = /^Bearer\s+(.+)$/i.exec(headers.authorization?.trim() ?? "")?.[1]?.trim();
        const apiKeyHeader = headers["x-api-key"];
        const headerKey = typeof apiKeyHeader === "string" ? apiKeyHeader.trim() : undefined;
        const bearerMatches = matches(bearer);
        const headerMatches = matches(headerKey);
        if (!bearerMatches && !headerMatches) throw new AuthenticationError();
    };
}

import { randomBytes } from "node:crypto";

/** Wire ids: `chatcmpl-…`, `resp_…`, `msg_…`, `toolu_…`; 24 random hex digits after the prefix and separator. */
export function newId(prefix: string, separator = "-"): string {
    return `${prefix}${separator}${randomBytes(12).toString("hex")}`;
}

/** OpenAI's `created`: Unix seconds. */
export function unixSeconds(): number {
    return Math.floor(Date.now() / 1000);
}

import { randomBytes } from "node:crypto";

/** OpenAI-style ids: `cmpl-…`, `chatcmpl-…`, `call_…`. */
export function newId(prefix: string, separator = "-"): string {
    return `${prefix}${separator}${randomBytes(12).toString("hex")}`;
}

export function unixSeconds(): number {
    return Math.floor(Date.now() / 1000);
}

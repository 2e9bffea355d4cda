import type { z } from "zod";
import { InvalidRequestError } from "../errors.js";

/** OpenAI's param notation: `messages[0].content`, `stop[2]`. */
export function paramPath(path: readonly (string | number)[]): string {
    return path.reduce<string>((text, part) => (typeof part === "number" ? `${text}[${part}]` : text === "" ? part : `${text}.${part}`), "");
}

/** Validates a wire body, turning the first problem into a 400 that names its param. */
export function parseWire<T extends z.ZodTypeAny>(schema: T, body: unknown): z.infer<T> {
    if (body === null || typeof body !== "object" || Array.isArray(body)) {
        throw new InvalidRequestError("The request body must be a JSON object.", "body");
    }
    const result = schema.safeParse(body);
    if (result.success) return result.data;
    const issue = result.error.issues[0]!;
    const param = paramPath(issue.path);
    throw new InvalidRequestError(param === "" ? issue.message : `Invalid value for '${param}': ${issue.message}`, param || null);
}

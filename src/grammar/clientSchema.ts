import { InvalidRequestError } from "../errors.js";
import { toGrammarSchema, UnsupportedSchemaError, type GrammarJsonSchema } from "./jsonSchemaSubset.js";

/**
 * A client's JSON schema in the grammar's subset; an unsupported keyword is an invalid request
 * naming `param` (the schema's place in the wire format's request) and the keyword.
 */
export function grammarSchema(schema: unknown, param: string): GrammarJsonSchema {
    // A NUL in a const, an enum or a property name broke the grammar's text (500 before), and even
    // escaped it would be a dead end: no token produces U+0000 (see deadEnd.ts).
    if (hasNul(schema)) throw new InvalidRequestError(`Unsupported schema in '${param}': a string with U+0000 (NUL), which no token can produce.`, param);
    try {
        return toGrammarSchema(schema);
    } catch (error) {
        if (error instanceof UnsupportedSchemaError) throw new InvalidRequestError(`Unsupported schema in '${param}': ${error.message}`, param);
        throw error;
    }
}

/**
 * A client's schema that the grammar enforces only because the model family needs a grammar
 * anyway (the generic format's free answer beside tools): never refused, an unsupported one (or
 * one with NUL) loosened to any JSON object, since the client asked for no enforcement.
 */
export function lenientGrammarSchema(schema: unknown): GrammarJsonSchema {
    if (!hasNul(schema)) {
        try {
            return toGrammarSchema(schema);
        } catch (error) {
            if (!(error instanceof UnsupportedSchemaError)) throw error;
        }
    }
    return toGrammarSchema({ type: "object" });
}

/** Any string or key with U+0000; the body's depth is bounded (src/http/jsonBody.ts), so the recursion is too. */
function hasNul(value: unknown): boolean {
    if (typeof value === "string") return value.includes("\u0000");
    if (Array.isArray(value)) return value.some(hasNul);
    if (value !== null && typeof value === "object") return Object.entries(value).some(([key, item]) => key.includes("\u0000") || hasNul(item));
    return false;
}

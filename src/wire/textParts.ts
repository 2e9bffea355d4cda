import { InvalidRequestError } from "../errors.js";

/** Which content parts a wire format reads as text, and how it calls them in errors. */
export interface TextPartRules {
    /** Part types whose string `text` is read: `text`; the Responses API's `input_text`, `output_text`, …. */
    textTypes: ReadonlySet<string>;
    /** "Content parts" (OpenAI) or "Content blocks" (Anthropic). */
    noun: string;
}

/** A text part's text; any other part is refused by name: the model reads text only. `param`: where the part sits. */
export function partText(part: unknown, param: string, rules: TextPartRules): string {
    const record = typeof part === "object" && part !== null ? part as Record<string, unknown> : {};
    const type = record["type"];
    if (typeof type === "string" && rules.textTypes.has(type)) {
        const text = record["text"];
        if (typeof text !== "string") throw new InvalidRequestError("A text part needs a string 'text'.", `${param}.text`);
        return text;
    }
    throw new InvalidRequestError(`${rules.noun} of type '${String(type)}' are not supported: this model reads text only.`, `${param}.type`);
}

/**
 * The parts' texts joined by `separator` (OpenAI's formats join with nothing; Anthropic's blocks
 * with a newline, vLLM's convention). `read` reads one part at `${param}[index]`.
 */
export function joinTextParts<Part>(parts: readonly Part[], param: string, separator: string, read: (part: Part, param: string) => string): string {
    return parts.map((part, index) => read(part, `${param}[${index}]`)).join(separator);
}

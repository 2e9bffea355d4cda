/** A tool call decoded from the JSON body of a `<tool_call>` block. */
export interface ParsedToolCall {
    name: string;
    /** The arguments as JSON text of an object: what OpenAI's `function.arguments` carries. */
    arguments: string;
}

/**
 * Decodes the body of a `<tool_call>…</tool_call>` block, `{"name": "f", "arguments": {…}}`.
 *
 * Returns `undefined` when the body is not a call the client could run, so the caller can leave
 * the block in the content as text: invalid JSON, no non-empty string `name`, or `arguments` that
 * is not an object. `arguments` may be absent or null (→ `"{}"`, since clients need a JSON string,
 * never `""`), an object (re-serialised), or a string holding a JSON object (kept verbatim: some
 * models double-encode, as OpenAI's own wire format does).
 */
export function parseToolCallBody(body: string): ParsedToolCall | undefined {
    const call = parseJson(body);
    if (!isJsonObject(call)) return undefined;
    const name = call["name"];
    if (typeof name !== "string" || name === "") return undefined;

    const args = call["arguments"];
    if (args === undefined || args === null) return { name, arguments: "{}" };
    if (isJsonObject(args)) return { name, arguments: JSON.stringify(args) };
    if (typeof args === "string" && isJsonObject(parseJson(args))) return { name, arguments: args };
    return undefined;
}

function parseJson(text: string): unknown {
    try {
        return JSON.parse(text) as unknown;
    } catch {
        return undefined;
    }
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}

import { parseToolCallBody } from "../toolCallBody.js";
import type { OutputPart } from "../types.js";

/**
 * Reads the generic format's answer, one JSON object (llama.cpp's generic format, before its
 * automatic parser replaced it): `{"response": "…"}` is content, `{"tool_calls": [{"name", "arguments", "id"?}, …]}`
 * (or llama.cpp's singular `{"tool_call": {…}}`) are calls. Incremental like every output parser:
 * the response string is decoded and streamed as it arrives (escapes held until whole); an object
 * of calls is held until it closes. Text that is no such object stays content, verbatim, so a model
 * that ignores the instructions (no grammar: a client's own) still answers.
 */
export class JsonEnvelopeReader {
    #state: "head" | "response" | "afterResponse" | "object" | "afterObject" | "plain" = "head";
    #pending = "";
    /** In "object": how far the pending text is scanned, and the scan's state there. */
    #scan = { at: 0, depth: 0, inString: false, escaped: false };

    push(text: string): OutputPart[] {
        this.#pending += text;
        return this.#drain(false);
    }

    flush(): OutputPart[] {
        return this.#drain(true);
    }

    #drain(final: boolean): OutputPart[] {
        const parts: OutputPart[] = [];
        const add = (part: OutputPart): void => {
            const last = parts.at(-1);
            if (part.type === "content" && last?.type === "content") last.text += part.text;
            else if (part.type !== "content" || part.text !== "") parts.push(part);
        };
        while (this.#step(add, final)) {
            // the state changed: the new state reads what is left
        }
        return parts;
    }

    /** Decides what it can in the current state; true when the state changed. */
    #step(add: (part: OutputPart) => void, final: boolean): boolean {
        switch (this.#state) {
            case "head": {
                const head = readHead(this.#pending);
                if (head === "undecided") {
                    if (final) this.#emitRest(add);
                    return false;
                }
                if (head === "plain") this.#state = "plain";
                else if (head === "object") this.#state = "object";
                else {
                    this.#pending = this.#pending.slice(head.stringStart);
                    this.#state = "response";
                }
                return true;
            }
            case "response":
                return this.#stepResponse(add, final);
            case "afterResponse": {
                const rest = this.#pending.trimStart();
                if (rest.startsWith("}")) {
                    this.#pending = rest.slice(1);
                    this.#state = "afterObject";
                    return true;
                }
                if (rest !== "") this.#state = "plain";
                else if (final) this.#pending = "";
                return rest !== "";
            }
            case "object":
                return this.#stepObject(add, final);
            case "afterObject":
                // Whitespace after the object is formatting; text after it is content, with its whitespace.
                if (this.#pending.trim() !== "") this.#state = "plain";
                else if (final) this.#pending = "";
                return this.#state === "plain";
            case "plain":
                this.#emitRest(add, final);
                return false;
        }
    }

    #stepResponse(add: (part: OutputPart) => void, final: boolean): boolean {
        const string = decodeStringStart(this.#pending, final);
        add({ type: "content", text: string.text });
        this.#pending = this.#pending.slice(string.consumed);
        if (!string.closed) return false;
        this.#state = "afterResponse";
        return true;
    }

    #stepObject(add: (part: OutputPart) => void, final: boolean): boolean {
        const end = this.#scanObject();
        if (end < 0) {
            if (final) this.#emitRest(add);
            return false;
        }
        const text = this.#pending.slice(0, end);
        this.#pending = this.#pending.slice(end);
        const parts = envelopeParts(text);
        if (parts === undefined) add({ type: "content", text });
        else parts.forEach(add);
        this.#state = parts === undefined ? "plain" : "afterObject";
        return true;
    }

    /** The end (exclusive) of the JSON object the pending text opens, or -1 while it is open. */
    #scanObject(): number {
        const scan = this.#scan;
        for (; scan.at < this.#pending.length; scan.at++) {
            const char = this.#pending[scan.at]!;
            if (scan.inString) {
                if (scan.escaped) scan.escaped = false;
                else if (char === "\\") scan.escaped = true;
                else if (char === '"') scan.inString = false;
            } else if (char === '"') scan.inString = true;
            else if (char === "{" || char === "[") scan.depth++;
            else if ((char === "}" || char === "]") && --scan.depth === 0) return ++scan.at;
        }
        return -1;
    }

    /** Emits the pending text as content (all of it when final; else all but a trailing high surrogate). */
    #emitRest(add: (part: OutputPart) => void, final = true): void {
        const keep = !final && isHighSurrogate(this.#pending.charCodeAt(this.#pending.length - 1)) ? 1 : 0;
        add({ type: "content", text: this.#pending.slice(0, this.#pending.length - keep) });
        this.#pending = this.#pending.slice(this.#pending.length - keep);
    }
}

/**
 * Where the text stands against `{"response": "` (whitespace allowed between the tokens): its
 * string's first character's index once matched; "object" when it opens another object;
 * "plain" when it is no object at all.
 */
function readHead(text: string): { stringStart: number } | "object" | "plain" | "undecided" {
    let at = 0;
    for (const [index, token] of ["{", '"response"', ":", '"'].entries()) {
        while (at < text.length && /\s/.test(text[at]!)) at++;
        const available = text.slice(at, at + token.length);
        if (!token.startsWith(available)) return index === 0 ? "plain" : "object";
        if (available.length < token.length) return "undecided";
        at += token.length;
    }
    return { stringStart: at };
}

const escapes: Readonly<Record<string, string>> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

/**
 * Decodes the start of a JSON string's body (after its opening quote): as far as it can, stopping
 * before an escape not whole yet and before a trailing high surrogate (its pair may follow), unless
 * `final`. `closed`: the closing quote was consumed.
 */
function decodeStringStart(text: string, final: boolean): { text: string; consumed: number; closed: boolean } {
    let decoded = "";
    let at = 0;
    while (at < text.length) {
        const char = text[at]!;
        if (char === '"') return { text: decoded, consumed: at + 1, closed: true };
        if (char !== "\\") {
            decoded += char;
            at++;
            continue;
        }
        const kind = text[at + 1];
        if (kind === undefined) break;
        if (kind !== "u") {
            // An unknown escape is not JSON; its character is the likeliest meaning.
            decoded += escapes[kind] ?? kind;
            at += 2;
            continue;
        }
        const hex = text.slice(at + 2, at + 6);
        if (hex.length < 4) break;
        decoded += /^[0-9a-fA-F]{4}$/.test(hex) ? String.fromCharCode(parseInt(hex, 16)) : `\\u${hex}`;
        at += 6;
    }
    if (final) return { text: decoded, consumed: text.length, closed: false };
    if (isHighSurrogate(decoded.charCodeAt(decoded.length - 1))) {
        // Hold the surrogate's source text (a raw character, or a six-character \uXXXX) for its pair.
        at -= text[at - 1] === decoded.at(-1) ? 1 : 6;
        decoded = decoded.slice(0, -1);
    }
    return { text: decoded, consumed: at, closed: false };
}

function isHighSurrogate(code: number): boolean {
    return code >= 0xd800 && code <= 0xdbff;
}

/**
 * The parts of a whole envelope object: a `content` string beside the calls first (the shape this
 * format writes a past turn of text and calls in), then the calls; undefined when it is no
 * envelope a client could use (the object then stays content).
 */
function envelopeParts(text: string): OutputPart[] | undefined {
    const envelope = parseObject(text);
    if (envelope === undefined) return undefined;
    const calls = Array.isArray(envelope["tool_calls"]) ? envelope["tool_calls"] as unknown[] : envelope["tool_call"] !== undefined ? [envelope["tool_call"]] : undefined;
    if (calls !== undefined) {
        const parsed = calls.map((call) => parseToolCallBody(JSON.stringify(call)));
        if (parsed.length === 0 || parsed.some((call) => call === undefined)) return undefined;
        const parts: OutputPart[] = typeof envelope["content"] === "string" ? [{ type: "content", text: envelope["content"] }] : [];
        return [...parts, ...parsed.map((call): OutputPart => ({ type: "tool_call", name: call!.name, arguments: call!.arguments }))];
    }
    if (!("response" in envelope)) return undefined;
    const response = envelope["response"];
    // A JSON answer (response_format beside tools) is the response's value, as JSON text.
    return [{ type: "content", text: typeof response === "string" ? response : JSON.stringify(response) }];
}

function parseObject(text: string): Record<string, unknown> | undefined {
    try {
        const value = JSON.parse(text) as unknown;
        return typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined;
    } catch {
        return undefined;
    }
}

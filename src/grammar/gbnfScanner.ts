/**
 * The one GBNF scanner: splits grammar text into the elements llama.cpp's parser
 * (`src/llama-grammar.cpp`) delimits, and reads the characters of a literal or a class as it
 * does. Maple's grammar checks and rewrites work on these elements, never on raw text, so a `#`,
 * a `::=` or a rule name inside a string literal is never mistaken for syntax.
 */

/** One element of GBNF text: `text.slice(start, end)`. */
export interface GbnfElement {
    /**
     * `literal`: `"…"`; `class`: `[…]`; `comment`: `#` to the end of the line (newline excluded);
     * `name`: a run of rule-name characters; `other`: any single other character.
     */
    kind: "literal" | "class" | "comment" | "name" | "other";
    start: number;
    end: number;
    /** A literal or class whose closing `"` / `]` is missing (the text ended inside it). */
    unclosed?: true;
}

const nameCharacter = /[a-zA-Z0-9_-]/;

/** The elements of `text`, in order; together they cover it exactly. */
export function* scanGbnf(text: string): Generator<GbnfElement> {
    let at = 0;
    while (at < text.length) {
        const start = at;
        const char = text[at]!;
        if (char === "\"" || char === "[") {
            const close = char === "\"" ? "\"" : "]";
            at += 1;
            while (at < text.length && text[at] !== close) at += text[at] === "\\" ? 2 : 1;
            if (at >= text.length) {
                yield { kind: char === "\"" ? "literal" : "class", start, end: text.length, unclosed: true };
                return;
            }
            yield { kind: char === "\"" ? "literal" : "class", start, end: at + 1 };
            at += 1;
        } else if (char === "#") {
            while (at < text.length && text[at] !== "\n" && text[at] !== "\r") at += 1;
            yield { kind: "comment", start, end: at };
        } else if (nameCharacter.test(char)) {
            while (at < text.length && nameCharacter.test(text[at]!)) at += 1;
            yield { kind: "name", start, end: at };
        } else {
            at += 1;
            yield { kind: "other", start, end: at };
        }
    }
}

const simpleEscapes: Record<string, number> = { n: 0x0a, r: 0x0d, t: 0x09, "\\": 0x5c, "\"": 0x22, "[": 0x5b, "]": 0x5d };
const hexEscapeLengths: Record<string, number> = { x: 2, u: 4, U: 8 };

/**
 * One character of a literal or class at `at`, as llama.cpp's `parse_char` reads it (escapes
 * `\n \r \t \\ \" \[ \]`, `\xHH`, `\uHHHH`, `\UHHHHHHHH`); undefined when malformed.
 */
export function readGbnfChar(text: string, at: number): { codePoint: number; end: number } | undefined {
    if (text[at] === "\\") {
        const kind = text[at + 1];
        if (kind === undefined) return undefined;
        const simple = simpleEscapes[kind];
        if (simple !== undefined) return { codePoint: simple, end: at + 2 };
        const length = hexEscapeLengths[kind];
        if (length === undefined) return undefined;
        const digits = text.slice(at + 2, at + 2 + length);
        if (digits.length !== length || !/^[0-9a-fA-F]+$/.test(digits)) return undefined;
        return { codePoint: Number.parseInt(digits, 16), end: at + 2 + length };
    }
    const codePoint = text.codePointAt(at);
    if (codePoint === undefined) return undefined;
    return { codePoint, end: at + (codePoint > 0xffff ? 2 : 1) };
}

/** The code points of a closed literal element; undefined when one is malformed. */
export function literalCodePoints(text: string, element: GbnfElement): number[] | undefined {
    const codePoints: number[] = [];
    for (let at = element.start + 1; at < element.end - 1;) {
        const char = readGbnfChar(text, at);
        if (char === undefined || char.end > element.end - 1) return undefined;
        codePoints.push(char.codePoint);
        at = char.end;
    }
    return codePoints;
}

/** A closed class element: whether it is negated (`[^…]`) and its ranges (a single character is `[c, c]`); undefined when malformed. */
export function classRanges(text: string, element: GbnfElement): { negated: boolean; ranges: [number, number][] } | undefined {
    const contentEnd = element.end - 1;
    let at = element.start + 1;
    const negated = text[at] === "^";
    if (negated) at += 1;
    const ranges: [number, number][] = [];
    while (at < contentEnd) {
        const first = readGbnfChar(text, at);
        if (first === undefined || first.end > contentEnd) return undefined;
        at = first.end;
        let last = first.codePoint;
        if (text[at] === "-" && at + 1 < contentEnd) {
            const end = readGbnfChar(text, at + 1);
            if (end === undefined || end.end > contentEnd) return undefined;
            last = end.codePoint;
            at = end.end;
        }
        ranges.push([first.codePoint, last]);
    }
    return { negated, ranges };
}

/** The names of the rules `gbnf` defines (`name ::= …` at the start of a line). */
export function definedRuleNames(gbnf: string): Set<string> {
    return new Set([...gbnf.matchAll(/^([a-zA-Z0-9_-]+)\s*::=/gm)].map((match) => match[1]!));
}

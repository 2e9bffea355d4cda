/**
 * Finds the GBNF elements a generation can reach but never get past: a string literal with
 * U+0000 in it, or a character class that matches no character from U+0001 to U+10FFFF
 * (`[z-a]`, `[\x00]`, `[^\x01-\U0010FFFF]`). llama.cpp reads each token's text as code points
 * ended by 0, so no token ever matches U+0000; at such an element its grammar sampler rejects
 * every token, samples one anyway, then throws while accepting it — and node-llama-cpp 3.22.1
 * loses that error in its batch dispatcher as an unhandled rejection, which ends the process.
 *
 * This is a conservative scan, not a parser: a dead element inside an alternative that has other
 * ways forward is refused too, and malformed text is left for llama.cpp's own parser to report.
 */
export function findGrammarDeadEnd(gbnf: string): string | undefined {
    // llama.cpp reads the grammar as a C string: a NUL ends it wherever it is.
    if (gbnf.includes("\u0000")) return "the grammar text contains a NUL character";
    let at = 0;
    while (at < gbnf.length) {
        const char = gbnf[at];
        if (char === "#") {
            while (at < gbnf.length && gbnf[at] !== "\n" && gbnf[at] !== "\r") at += 1;
        } else if (char === "\"") {
            const literal = readLiteral(gbnf, at);
            if (literal === undefined) return undefined;
            if (literal.dead) return `the literal ${excerpt(gbnf, at, literal.end)} needs U+0000, which no token can produce`;
            at = literal.end;
            continue;
        } else if (char === "[") {
            const charClass = readClass(gbnf, at);
            if (charClass === undefined) return undefined;
            if (charClass.dead) return `the character class ${excerpt(gbnf, at, charClass.end)} matches no character a token can produce`;
            at = charClass.end;
            continue;
        }
        at += 1;
    }
    return undefined;
}

const maxCodePoint = 0x10ffff;
const simpleEscapes: Record<string, number> = { n: 0x0a, r: 0x0d, t: 0x09, "\\": 0x5c, "\"": 0x22, "[": 0x5b, "]": 0x5d };
const hexEscapeLengths: Record<string, number> = { x: 2, u: 4, U: 8 };

/** One character of a literal or class, as llama.cpp's `parse_char` reads it; undefined if malformed. */
function readChar(text: string, at: number): { codePoint: number; end: number } | undefined {
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

function readLiteral(text: string, start: number): { dead: boolean; end: number } | undefined {
    let at = start + 1;
    let dead = false;
    while (at < text.length && text[at] !== "\"") {
        const char = readChar(text, at);
        if (char === undefined) return undefined;
        if (char.codePoint === 0) dead = true;
        at = char.end;
    }
    return at < text.length ? { dead, end: at + 1 } : undefined;
}

function readClass(text: string, start: number): { dead: boolean; end: number } | undefined {
    let at = start + 1;
    const negated = text[at] === "^";
    if (negated) at += 1;
    const ranges: [number, number][] = [];
    while (at < text.length && text[at] !== "]") {
        const first = readChar(text, at);
        if (first === undefined) return undefined;
        at = first.end;
        let last = first.codePoint;
        if (text[at] === "-" && text[at + 1] !== undefined && text[at + 1] !== "]") {
            const end = readChar(text, at + 1);
            if (end === undefined) return undefined;
            last = end.codePoint;
            at = end.end;
        }
        ranges.push([first.codePoint, last]);
    }
    if (at >= text.length) return undefined;
    return { dead: !matchesSomeCharacter(ranges, negated), end: at + 1 };
}

/** Whether a class matches some code point from U+0001 to U+10FFFF (a reversed range matches nothing). */
function matchesSomeCharacter(ranges: readonly [number, number][], negated: boolean): boolean {
    const clipped = ranges
        .filter(([first, last]) => first <= last && last >= 1 && first <= maxCodePoint)
        .map(([first, last]): [number, number] => [Math.max(first, 1), Math.min(last, maxCodePoint)]);
    if (!negated) return clipped.length > 0;
    // Negated: something in 1..max must be left uncovered.
    clipped.sort((a, b) => a[0] - b[0]);
    let next = 1;
    for (const [first, last] of clipped) {
        if (first > next) return true;
        next = Math.max(next, last + 1);
    }
    return next <= maxCodePoint;
}

function excerpt(text: string, start: number, end: number): string {
    const element = text.slice(start, end);
    return element.length > 40 ? `${element.slice(0, 40)}…` : element;
}

import { classRanges, literalCodePoints, scanGbnf } from "./gbnfScanner.js";

/**
 * Finds the GBNF elements a generation can reach but never get past: a string literal with
 * U+0000 in it, or a character class that matches no character from U+0001 to U+10FFFF
 * (`[z-a]`, `[\x00]`, `[^\x01-\U0010FFFF]`). llama.cpp reads each token's text as code points
 * ended by 0, so no token ever matches U+0000: at such an element its grammar sampler rejects
 * every token and the generation fails there (with scripts/patch-node-llama-cpp.js the error
 * reaches the request instead of ending the process, but the request can never succeed), so such
 * a grammar is refused up front with a message naming the element.
 *
 * This is a conservative check, not a parser: a dead element inside an alternative that has other
 * ways forward is refused too, and malformed text is left for llama.cpp's own parser to report.
 */
export function findGrammarDeadEnd(gbnf: string): string | undefined {
    // llama.cpp reads the grammar as a C string: a NUL ends it wherever it is.
    if (gbnf.includes("\u0000")) return "the grammar text contains a NUL character";
    for (const element of scanGbnf(gbnf)) {
        if (element.kind !== "literal" && element.kind !== "class") continue;
        if (element.unclosed === true) return undefined;
        if (element.kind === "literal") {
            const codePoints = literalCodePoints(gbnf, element);
            if (codePoints === undefined) return undefined;
            if (codePoints.includes(0)) return `the literal ${excerpt(gbnf, element.start, element.end)} needs U+0000, which no token can produce`;
        } else {
            const charClass = classRanges(gbnf, element);
            if (charClass === undefined) return undefined;
            if (!matchesSomeCharacter(charClass.ranges, charClass.negated)) {
                return `the character class ${excerpt(gbnf, element.start, element.end)} matches no character a token can produce`;
            }
        }
    }
    return undefined;
}

/** What findEndOfGenerationToken needs of the model's vocabulary. */
export interface GrammarVocabulary {
    /** The id of the one token `text` (a special token's text, `<|call|>`) is, else undefined. */
    singleToken(text: string): number | undefined;
    isEndOfGeneration(token: number): boolean;
}

/**
 * Finds a token element (`<[200012]>`, `<|call|>`) that names an end-of-generation token. llama.cpp's
 * grammar sampler never lets such a token match a grammar element: it allows end-of-generation
 * tokens only where the grammar is complete (`llama_grammar_apply_impl`, `allow_eog`). At that
 * element every token is rejected, and the generation failed with "Unexpected empty grammar
 * stack" as a server error. A grammar ends generation by ending: `root ::= "a" "b"` stops after
 * "ab" with the model's end-of-generation token. `!<…>` (any token but that one) is fine.
 */
export function findEndOfGenerationToken(gbnf: string, vocabulary: GrammarVocabulary): string | undefined {
    let skipUntil = 0;
    for (const element of scanGbnf(gbnf)) {
        if (element.start < skipUntil || element.kind !== "other" || gbnf[element.start] !== "<") continue;
        const close = gbnf.indexOf(">", element.start + 1);
        if (close < 0) return undefined;
        skipUntil = close + 1;
        if (gbnf[element.start - 1] === "!") continue;
        const reference = gbnf.slice(element.start, close + 1);
        const byId = /^<\[(\d+)\]>$/.exec(reference);
        const token = byId !== null ? Number(byId[1]) : vocabulary.singleToken(reference);
        if (token !== undefined && vocabulary.isEndOfGeneration(token)) {
            return `the token ${reference} ends generation, and llama.cpp matches an end-of-generation token only where the grammar is complete: `
                + "end the rule there instead (the model then ends with that token)";
        }
    }
    return undefined;
}

const maxCodePoint = 0x10ffff;

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

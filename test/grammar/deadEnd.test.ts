import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { findEndOfGenerationToken, findGrammarDeadEnd } from "../../src/grammar/deadEnd.js";

describe("findGrammarDeadEnd: GBNF elements no token can get past", () => {
    for (const grammar of [
        "root ::= \"ok\"",
        "root ::= [a-z]+ | \"x\"",
        "root ::= [^\"\\\\\\x7F\\x00-\\x1F]*",
        "root ::= [\\x00-\\x05]",
        "root ::= [^\\x00-\\x7F]",
        "root ::= \"a\\nb\\t\\\"c\\\\\" [\\[\\]]",
        "root ::= \"\\u00e9\\U0001F600\" # a comment with \"\\x00\" and [z-a] in it",
        "root ::= [-a]",
        "root ::= [a-]"
    ]) {
        it(`accepts ${JSON.stringify(grammar)}`, () => {
            assert.equal(findGrammarDeadEnd(grammar), undefined);
        });
    }

    for (const [grammar, element] of [
        ["root ::= \"\\u0000\"", "\"\\u0000\""],
        ["root ::= \"ab\\x00\"", "\"ab\\x00\""],
        ["root ::= \"\\U00000000\"", "\"\\U00000000\""],
        ["root ::= [\\x00]", "[\\x00]"],
        ["root ::= [z-a]", "[z-a]"],
        ["root ::= \"a\" | [b-a]", "[b-a]"],
        ["root ::= [^\\x01-\\U0010FFFF]", "[^\\x01-\\U0010FFFF]"],
        ["root ::= [^\\x00-\\U0010FFFF]", "[^\\x00-\\U0010FFFF]"],
        ["root ::= [^a-z\\x00-`{-\\U0010FFFF]", "[^a-z\\x00-`{-\\U0010FFFF]"],
        ["root ::= [\\U00110000-\\U00120000]", "[\\U00110000-\\U00120000]"]
    ] as const) {
        it(`refuses ${JSON.stringify(grammar)}, naming ${element}`, () => {
            assert.ok(findGrammarDeadEnd(grammar)?.includes(element), findGrammarDeadEnd(grammar));
        });
    }

    it("refuses a NUL character anywhere in the text (llama.cpp reads a C string)", () => {
        assert.match(findGrammarDeadEnd("root ::= \"a\" \u0000 junk") ?? "", /NUL/);
    });

    it("leaves malformed text to llama.cpp's parser", () => {
        for (const grammar of ["root ::= \"unterminated", "root ::= [abc", "root ::= \"\\q\"", "root ::= \"\\x0\""]) {
            assert.equal(findGrammarDeadEnd(grammar), undefined, grammar);
        }
    });
});

describe("findEndOfGenerationToken: token elements llama.cpp never matches", () => {
    // A vocabulary where 7 (<|end|>) ends generation and 3 (<|tool|>) does not.
    const vocabulary = {
        singleToken: (text: string) => ({ "<|end|>": 7, "<|tool|>": 3 } as Record<string, number>)[text],
        isEndOfGeneration: (token: number) => token === 7
    };

    for (const grammar of [
        "root ::= \"a\" <[3]> \"b\"",
        "root ::= \"a\" <|tool|>",
        "root ::= \"a\" !<[7]> \"b\"",
        "root ::= \"<[7]>\" [<] # <|end|>",
        "root ::= \"a\" <|unknown|>"
    ]) {
        it(`accepts ${JSON.stringify(grammar)}`, () => {
            assert.equal(findEndOfGenerationToken(grammar, vocabulary), undefined);
        });
    }

    for (const [grammar, element] of [
        ["root ::= \"a\" <[7]>", "<[7]>"],
        ["root ::= \"a\" <[7]> \"b\"", "<[7]>"],
        ["root ::= x\nx ::= <|end|> | \"y\"", "<|end|>"]
    ] as const) {
        it(`refuses ${JSON.stringify(grammar)}, naming ${element}`, () => {
            const found = findEndOfGenerationToken(grammar, vocabulary);
            assert.ok(found?.includes(`the token ${element} ends generation`), found);
        });
    }
});

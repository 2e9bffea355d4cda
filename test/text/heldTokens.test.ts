import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { StopMatcher } from "../../src/text/stopMatcher.js";
import { HeldTokens } from "../../src/text/heldTokens.js";

/**
 * Feeds tokens (their decoded text) through a stop matcher as generateText does; returns the
 * text released and the tokens released with each piece.
 */
function run(tokens: string[], stops: string[]): { text: string; pieces: [string, string[]][] } {
    const matcher = new StopMatcher(stops);
    const held = new HeldTokens<string>();
    const pieces: [string, string[]][] = [];
    for (const token of tokens) {
        held.generated(token, token);
        const result = matcher.push(token);
        pieces.push([result.text, held.released(result.text)]);
        if (result.matched !== undefined) return { text: pieces.map(([text]) => text).join(""), pieces };
    }
    const tail = matcher.flush();
    pieces.push([tail, [...held.released(tail), ...held.flush()]]);
    return { text: pieces.map(([text]) => text).join(""), pieces };
}

describe("HeldTokens", () => {
    it("drops the stop string's tokens and keeps one that straddles the cut (the issue's example)", () => {
        const { text, pieces } = run(["h", "ello", ",w", "o", "rl", "d", ",again"], ["world"]);
        assert.equal(text, "hello,");
        assert.deepEqual(pieces.flatMap(([, tokens]) => tokens), ["h", "ello", ",w"]);
        // Each token comes with the piece that carries its first character.
        assert.deepEqual(pieces.map(([piece, tokens]) => [piece, tokens]), [["h", ["h"]], ["ello", ["ello"]], [",", [",w"]], ["", []], ["", []], ["", []]]);
    });

    it("drops a token that begins exactly at the cut", () => {
        const { text, pieces } = run(["hello", ",", "world"], [",world"]);
        assert.equal(text, "hello");
        assert.deepEqual(pieces.flatMap(([, tokens]) => tokens), ["hello"]);
    });

    it("holds a token whose text a possible stop string holds, and releases it when the text turns out not to be one", () => {
        const { text, pieces } = run(["a", "wor", "m", "!"], ["world"]);
        assert.equal(text, "aworm!");
        assert.deepEqual(pieces, [["a", ["a"]], ["", []], ["worm", ["wor", "m"]], ["!", ["!"]], ["", []]]);
    });

    it("keeps the bytes of one character together: tokens without text begin where their character does", () => {
        const held = new HeldTokens<string>();
        held.generated("é-byte1", "");
        held.generated("é-byte2", "é");
        assert.deepEqual(held.released("é"), ["é-byte1", "é-byte2"]);
        // A character the generation never completed: the decoder's flush gives U+FFFD for it.
        held.generated("ö-byte1", "");
        assert.deepEqual(held.released(""), []);
        held.decoded("\uFFFD");
        assert.deepEqual(held.released("\uFFFD"), ["ö-byte1"]);
        assert.deepEqual(held.flush(), []);
    });

    it("releases every token with its own text when there are no stop strings", () => {
        const { pieces } = run(["one", " two", "", " three"], []);
        assert.deepEqual(pieces.flatMap(([, tokens]) => tokens), ["one", " two", "", " three"]);
    });
});

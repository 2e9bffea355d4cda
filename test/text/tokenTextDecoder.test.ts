import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { TokenTextDecoder } from "../../src/text/tokenTextDecoder.js";

/** A byte-level vocabulary: token n is the byte n, decoded as UTF-8 (an incomplete character is U+FFFD, as llama.cpp gives it). */
function byteDecoder(): { decoder: TokenTextDecoder; calls: { tokens: number[]; previous: number[] }[] } {
    const calls: { tokens: number[]; previous: number[] }[] = [];
    const decoder = new TokenTextDecoder((tokens, previous) => {
        calls.push({ tokens: [...tokens], previous: [...(previous ?? [])] });
        return Buffer.from(tokens).toString("utf8");
    });
    return { decoder, calls };
}

function bytesOf(text: string): number[] {
    return [...Buffer.from(text, "utf8")];
}

describe("TokenTextDecoder", () => {
    it("releases ASCII tokens at once", () => {
        const { decoder } = byteDecoder();
        assert.deepEqual(bytesOf("hi").map((token) => decoder.push(token)), ["h", "i"]);
        assert.equal(decoder.flush(), "");
    });

    it("holds the bytes of a character until it is complete (2, 3 and 4 bytes)", () => {
        for (const character of ["é", "€", "😀"]) {
            const { decoder } = byteDecoder();
            const bytes = bytesOf(character);
            const texts = bytes.map((token) => decoder.push(token));
            assert.deepEqual(texts, [...bytes.slice(1).map(() => ""), character], character);
        }
    });

    it("gives up on bytes that never complete a character: U+FFFD after four tokens, never an error", () => {
        const { decoder } = byteDecoder();
        const texts = [0xff, 0xff, 0xff, 0xff].map((token) => decoder.push(token));
        assert.deepEqual(texts, ["", "", "", "\uFFFD\uFFFD\uFFFD\uFFFD"]);
        assert.equal(decoder.push(0x41), "A");
    });

    it("flushes an incomplete character at the end as U+FFFD", () => {
        const { decoder } = byteDecoder();
        assert.equal(decoder.push(0xe2), "");
        assert.equal(decoder.push(0x82), "");
        assert.equal(decoder.flush(), "\uFFFD");
        assert.equal(decoder.flush(), "");
    });

    it("hands the detokenizer the last eight released tokens as context (leading-space decisions)", () => {
        const { decoder, calls } = byteDecoder();
        const tokens = bytesOf("abcdefghijk");
        for (const token of tokens) decoder.push(token);
        const last = calls.at(-1)!;
        assert.deepEqual(last.tokens, [tokens.at(-1)]);
        assert.deepEqual(last.previous, tokens.slice(-9, -1));
    });

    it("joins to the same text as decoding everything at once, for any split of characters into byte tokens", () => {
        const text = "añ€😀 b\u00e9";
        const { decoder } = byteDecoder();
        const output = bytesOf(text).map((token) => decoder.push(token)).join("") + decoder.flush();
        assert.equal(output, text);
    });
});

describe("TokenTextDecoder with preserved special tokens", () => {
    /** Bytes as above; tokens 1000 and up are special tokens, which the detokenizer writes as nothing. */
    const special = new Map([[1000, "<|channel|>"], [1001, "<|message|>"]]);
    const detokenize = (tokens: readonly number[]): string => Buffer.from(tokens.filter((token) => token < 256)).toString("utf8");

    it("writes a preserved token's own text, deciding what is held before it", () => {
        const decoder = new TokenTextDecoder(detokenize, { tokens: new Set([1000]), text: (token) => special.get(token)! });
        const texts = [...bytesOf("a"), 0xc3, 1000, ...bytesOf("b"), 1001].map((token) => decoder.push(token));
        // The lone 0xC3 before the special token can no longer complete: U+FFFD, then the marker.
        assert.deepEqual(texts, ["a", "", "\uFFFD<|channel|>", "b", ""]);
    });

    it("leaves other special tokens out, as without preservation", () => {
        const decoder = new TokenTextDecoder(detokenize);
        assert.deepEqual([1000, ...bytesOf("x")].map((token) => decoder.push(token)), ["", "x"]);
    });
});

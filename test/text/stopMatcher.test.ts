import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { StopMatcher } from "../../src/text/stopMatcher.js";

/** Feeds `pieces` through a matcher: the text it let out, and the stop it matched (then nothing more is fed). */
function run(stops: string[], pieces: string[]): { text: string; matched: string | undefined } {
    const matcher = new StopMatcher(stops);
    let text = "";
    for (const piece of pieces) {
        const result = matcher.push(piece);
        text += result.text;
        if (result.matched !== undefined) return { text, matched: result.matched };
    }
    return { text: text + matcher.flush(), matched: undefined };
}

/** What a matcher must produce for the whole text: everything before the earliest stop, or all of it. */
function expected(stops: string[], text: string): { text: string; matched: string | undefined } {
    let best: { index: number; stop: string } | undefined;
    for (const stop of stops) {
        const index = text.indexOf(stop);
        if (index !== -1 && (best === undefined || index < best.index)) best = { index, stop };
    }
    return best === undefined ? { text, matched: undefined } : { text: text.slice(0, best.index), matched: best.stop };
}

/** Every way to cut `text` into two or three pieces. */
function splits(text: string): string[][] {
    const result: string[][] = [[text]];
    for (let first = 0; first <= text.length; first += 1) {
        for (let second = first; second <= text.length; second += 1) {
            result.push([text.slice(0, first), text.slice(first, second), text.slice(second)]);
        }
    }
    return result;
}

describe("StopMatcher", () => {
    it("passes text straight through when there are no stop strings", () => {
        const matcher = new StopMatcher([]);
        assert.deepEqual(matcher.push("hello"), { text: "hello" });
        assert.equal(matcher.flush(), "");
    });

    it("cuts the stop string and everything after it", () => {
        assert.deepEqual(new StopMatcher(["STOP"]).push("hello STOP world"), { text: "hello ", matched: "STOP" });
    });

    it("holds back a possible start of a stop string until it is decided", () => {
        const matcher = new StopMatcher(["</end>"]);
        assert.deepEqual(matcher.push("abc </e"), { text: "abc " });
        assert.deepEqual(matcher.push("x"), { text: "</ex" });
        assert.deepEqual(matcher.push("</en"), { text: "" });
        assert.equal(matcher.flush(), "</en");
    });

    it("matches the earliest stop string, whichever is listed first", () => {
        assert.deepEqual(new StopMatcher(["b", "abc"]).push("xabc"), { text: "x", matched: "abc" });
        assert.deepEqual(new StopMatcher(["abc", "b"]).push("xbabc"), { text: "x", matched: "b" });
    });

    it("finds a stop string across every split of the text into pieces", () => {
        const stops = ["\n\n", "END", "Q"];
        for (const text of ["one\n\ntwo", "no stop here", "xxEND", "\n", "tail Q", "EN\nQ"]) {
            for (const pieces of splits(text)) assert.deepEqual(run(stops, pieces), expected(stops, text), JSON.stringify(pieces));
        }
    });

    // When one stop string contains another ("E" in "END"), which one matches depends on where the
    // text is split (the shorter is complete first); the property holds for stops that do not.
    it("gives the same result as matching the whole text, for any text, split and stops that do not contain one another", () => {
        const alphabet = fc.constantFrom("a", "b", "c", "\n", "é", "😀");
        const word = fc.array(alphabet, { minLength: 1, maxLength: 4 }).map((chars) => chars.join(""));
        fc.assert(fc.property(
            fc.array(word, { minLength: 1, maxLength: 3 }),
            fc.array(fc.array(alphabet, { maxLength: 6 }).map((chars) => chars.join("")), { maxLength: 6 }),
            (stops, pieces) => {
                fc.pre(stops.every((stop, index) => stops.every((other, otherIndex) => index === otherIndex || !other.includes(stop))));
                assert.deepEqual(run(stops, pieces), expected(stops, pieces.join("")));
            }
        ));
    });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { OutputParser } from "../../src/chatFormat/formats/chatFormat.js";
import type { OutputPart } from "../../src/chatFormat/types.js";

/**
 * The replay harness every chat format's output parser is tested with: a recorded output, fed in
 * one push, split at every boundary, and one UTF-16 unit or code point at a time, must give the
 * same parts; what is streamed before a split is never retracted; and no piece of a marker ever
 * reaches a part.
 */

/** One recorded output and the parts it must give. */
export interface ReplayFixture<Options> {
    name: string;
    options: Options;
    text: string;
    expected: OutputPart[];
    /** The expected output itself contains marker text (a block kept as content, a literal tag). */
    markersInOutput?: boolean;
    /**
     * The parts are decoded from the raw text (a JSON string's escapes), not verbatim pieces of it,
     * so the partial-marker check, which finds each part in the raw text, does not apply.
     */
    decoded?: boolean;
}

export const reasoning = (text: string): OutputPart => ({ type: "reasoning", text });
export const content = (text: string): OutputPart => ({ type: "content", text });
export const toolCall = (name: string, args: string): OutputPart => ({ type: "tool_call", name, arguments: args });

/** Runs a parser over `pieces`, returning each push's parts and the flush's as the last entry. */
export function runPieces(parser: OutputParser, pieces: readonly string[]): OutputPart[][] {
    const batches = pieces.map((piece) => parser.push(piece));
    batches.push(parser.flush());
    return batches;
}

/** Concatenates parts, merging adjacent text of the same type (the order the client sees). */
export function merge(parts: readonly OutputPart[]): OutputPart[] {
    const merged: OutputPart[] = [];
    for (const part of parts) {
        const last = merged.at(-1);
        if (part.type !== "tool_call" && last !== undefined && last.type === part.type) {
            merged[merged.length - 1] = { type: part.type, text: last.text + part.text };
        } else {
            merged.push({ ...part });
        }
    }
    return merged;
}

/** Whether what was streamed so far can only be extended into `expected`, never contradicted. */
function isStreamPrefix(streamed: readonly OutputPart[], expected: readonly OutputPart[]): boolean {
    const parts = merge(streamed);
    return parts.every((part, index) => {
        const want = expected[index];
        if (want === undefined || want.type !== part.type) return false;
        if (part.type === "tool_call" || want.type === "tool_call") return JSON.stringify(part) === JSON.stringify(want);
        return index === parts.length - 1 ? want.text.startsWith(part.text) : want.text === part.text;
    });
}

function texts(parts: readonly OutputPart[]): string[] {
    return parts.flatMap((part) => (part.type === "tool_call" ? [] : [part.text]));
}

/**
 * The text emitted before `cut` must not end with the start of a marker that the raw text goes on
 * to complete. Emitted text is always a verbatim piece of the raw text, so find where it ends there.
 */
function assertNoPartialMarkerBefore(emitted: readonly OutputPart[], text: string, cut: number, markers: readonly string[]): void {
    const last = texts(emitted).at(-1);
    if (last === undefined) return;
    const start = text.lastIndexOf(last, cut - last.length);
    assert.ok(start >= 0, `${JSON.stringify(last)} is not a piece of the raw text before ${cut}`);
    const rest = text.slice(start + last.length);
    for (const marker of markers) {
        for (let size = 1; size < marker.length; size++) {
            if (last.endsWith(marker.slice(0, size)) && rest.startsWith(marker.slice(size))) {
                assert.fail(`emitted ${JSON.stringify(last)} ends with the start of ${marker}`);
            }
        }
    }
}

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Registers the replay tests of `fixtures` (inside the caller's `describe`). `parser` makes a fresh
 * parser for a fixture's options; `markers` are the family's marker texts, none of which (nor a
 * piece of one about to complete) may reach a part unless the fixture says so.
 */
export function replayFixtures<Options>(fixtures: readonly ReplayFixture<Options>[], parser: (options: Options) => OutputParser, markers: readonly string[]): void {
    for (const fixture of fixtures) {
        describe(fixture.name, () => {
            const { options, text, expected } = fixture;
            const run = (pieces: readonly string[]): OutputPart[][] => runPieces(parser(options), pieces);

            it("gives the expected parts in one push", () => {
                assert.deepEqual(merge(run([text]).flat()), expected);
            });

            it("gives the same parts split at every boundary, and never emits what it must retract", () => {
                for (let cut = 0; cut <= text.length; cut++) {
                    const [first = [], ...others] = run([text.slice(0, cut), text.slice(cut)]);
                    assert.deepEqual(merge([...first, ...others.flat()]), expected, `split at ${cut}`);
                    assert.ok(isStreamPrefix(first, expected), `first piece at ${cut} emitted ${JSON.stringify(first)}`);
                    if (fixture.markersInOutput !== true && fixture.decoded !== true) assertNoPartialMarkerBefore(first, text, cut, markers);
                }
            });

            it("gives the same parts fed one UTF-16 unit and one code point at a time", () => {
                const units = run(text.split(""));
                assert.deepEqual(merge(units.flat()), expected);
                for (const part of texts(units.flat())) assert.doesNotMatch(part, loneSurrogate);
                assert.deepEqual(merge(run(Array.from(text)).flat()), expected);
            });

            if (fixture.markersInOutput !== true) {
                it("never emits a marker", () => {
                    for (const part of texts(run(Array.from(text)).flat())) {
                        for (const marker of markers) assert.ok(!part.includes(marker), `${JSON.stringify(part)} has ${marker}`);
                    }
                });
            }
        });
    }
}

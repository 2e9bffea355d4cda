import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ChatOutputParser, type OutputParserOptions } from "../../src/chatFormat/outputParser.js";
import { parseToolCallBody } from "../../src/chatFormat/toolCallBody.js";
import type { OutputPart } from "../../src/chatFormat/types.js";

const MARKERS = ["<think>", "</think>", "<tool_call>", "</tool_call>"];

const maple: OutputParserOptions = { startsInReasoning: true, parseToolCalls: false };
const mapleWithTools: OutputParserOptions = { startsInReasoning: true, parseToolCalls: true };
const stockQwen3: OutputParserOptions = { startsInReasoning: false, parseToolCalls: false };
const stockQwen3WithTools: OutputParserOptions = { startsInReasoning: false, parseToolCalls: true };

interface Fixture {
    name: string;
    options: OutputParserOptions;
    text: string;
    expected: OutputPart[];
    /** The expected output itself contains marker text (a block kept as content, a literal tag). */
    markersInOutput?: boolean;
}

const reasoning = (text: string): OutputPart => ({ type: "reasoning", text });
const content = (text: string): OutputPart => ({ type: "content", text });
const toolCall = (name: string, args: string): OutputPart => ({ type: "tool_call", name, arguments: args });

const fixtures: Fixture[] = [
    {
        name: "reasoning then answer",
        options: maple,
        text: "The user asks 17*23.\n17*20 = 340, 17*3 = 51.\nSo 391.\n</think>\n\n391",
        expected: [reasoning("The user asks 17*23.\n17*20 = 340, 17*3 = 51.\nSo 391."), content("391")]
    },
    {
        name: "cut off mid-thought",
        options: maple,
        text: "Let me think about this carefully.\n\nStep 1: read the question  \n",
        expected: [reasoning("Let me think about this carefully.\n\nStep 1: read the question")]
    },
    {
        name: "cut off inside a closing marker",
        options: maple,
        text: "Almost done </thi",
        expected: [reasoning("Almost done </thi")]
    },
    {
        name: "answer keeps its inner and trailing whitespace",
        options: maple,
        text: "ok\n</think>\n\n  \nLine one\n\nLine two\n",
        expected: [reasoning("ok"), content("Line one\n\nLine two\n")]
    },
    {
        name: "Qwen3 opens <think> itself, after leading whitespace",
        options: stockQwen3,
        text: "\n<think>\nThe user greets me.\n</think>\n\nHello! How can I help?",
        expected: [reasoning("The user greets me."), content("Hello! How can I help?")]
    },
    {
        name: "Qwen3 with an empty think block",
        options: stockQwen3,
        text: "<think>\n\n</think>\n\nHi!",
        expected: [content("Hi!")]
    },
    {
        name: "no think block when the prompt did not open one",
        options: stockQwen3,
        text: "  Hello there.",
        expected: [content("  Hello there.")]
    },
    {
        name: "a </think> is content when reasoning never started",
        options: stockQwen3,
        text: "Close it with </think> like this.",
        expected: [content("Close it with </think> like this.")],
        markersInOutput: true
    },
    {
        name: "redundant <think> after a prompt that opened it",
        options: maple,
        text: "<think>\nplan\n</think>\nok",
        expected: [reasoning("plan"), content("ok")]
    },
    {
        name: "a later <think> in the answer is content (vLLM)",
        options: maple,
        text: "r\n</think>\n\nTags like <think> are for reasoning.",
        expected: [reasoning("r"), content("Tags like <think> are for reasoning.")],
        markersInOutput: true
    },
    {
        name: "tool call",
        options: mapleWithTools,
        text:
            "I should call the weather tool.\n</think>\n\n"
            + '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lagos"}}\n</tool_call>',
        expected: [reasoning("I should call the weather tool."), toolCall("get_weather", '{"city":"Lagos"}')]
    },
    {
        name: "two tool calls",
        options: mapleWithTools,
        text:
            "Two cities.\n</think>\n\n"
            + '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lagos"}}\n</tool_call>\n'
            + '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Accra", "unit": "C"}}\n</tool_call>\n',
        expected: [
            reasoning("Two cities."),
            toolCall("get_weather", '{"city":"Lagos"}'),
            toolCall("get_weather", '{"city":"Accra","unit":"C"}')
        ]
    },
    {
        name: "tool call with whitespace and text around",
        options: mapleWithTools,
        text:
            "Look it up.\n</think>\n\nLet me check that.\n\n"
            + '<tool_call>\n{"name":"lookup","arguments":{"q":"maple syrup"}}\n</tool_call>\n\nDone checking. ',
        expected: [
            reasoning("Look it up."),
            content("Let me check that."),
            toolCall("lookup", '{"q":"maple syrup"}'),
            content("\n\nDone checking. ")
        ]
    },
    {
        name: "tool call without arguments, and with arguments as a JSON string",
        options: stockQwen3WithTools,
        text:
            '<tool_call>{"name": "now"}</tool_call>'
            + '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}</tool_call>',
        expected: [toolCall("now", "{}"), toolCall("add", '{"a": 1, "b": 2}')]
    },
    {
        name: "invalid JSON body stays in content with its markers",
        options: mapleWithTools,
        text: "x\n</think>\n\nSure.\n<tool_call>\n{not json}\n</tool_call>\nAfter.",
        expected: [reasoning("x"), content("Sure.\n<tool_call>\n{not json}\n</tool_call>\nAfter.")],
        markersInOutput: true
    },
    {
        name: "body without a string name stays in content",
        options: stockQwen3WithTools,
        text: '<tool_call>{"arguments": {}}</tool_call>',
        expected: [content('<tool_call>{"arguments": {}}</tool_call>')],
        markersInOutput: true
    },
    {
        name: "unclosed block becomes content at the end",
        options: mapleWithTools,
        text: 'x\n</think>\n\nOne moment.\n<tool_call>\n{"name": "get_weather", "argu',
        expected: [reasoning("x"), content('One moment.\n<tool_call>\n{"name": "get_weather", "argu')],
        markersInOutput: true
    },
    {
        name: "<tool_call> is plain content when no tools were offered",
        options: maple,
        text: 'x\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>\n',
        expected: [reasoning("x"), content('<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>\n')],
        markersInOutput: true
    },
    {
        name: "a tool call inside reasoning is reasoning text",
        options: mapleWithTools,
        text: 'Maybe <tool_call>{"name": "x"}</tool_call>?\n</think>\nNo.',
        expected: [reasoning('Maybe <tool_call>{"name": "x"}</tool_call>?'), content("No.")],
        markersInOutput: true
    },
    {
        name: "marker lookalikes",
        options: mapleWithTools,
        text: "Compare </thin and </thinking> and </ think>.</think>Answer <tool_cal and <tool_calls> <tool_call",
        expected: [
            reasoning("Compare </thin and </thinking> and </ think>."),
            content("Answer <tool_cal and <tool_calls> <tool_call")
        ]
    },
    {
        name: "opening lookalikes when the model may open <think>",
        options: stockQwen3,
        text: "<thinking is fun",
        expected: [content("<thinking is fun")]
    },
    {
        name: "unicode and emoji next to markers",
        options: mapleWithTools,
        text:
            "思考中… 🤔🧠</think>\n\n答案是 🎉 391 ✅\n"
            + '<tool_call>{"name": "say", "arguments": {"text": "héllo 👋"}}</tool_call>🙂',
        expected: [
            reasoning("思考中… 🤔🧠"),
            content("答案是 🎉 391 ✅"),
            toolCall("say", '{"text":"héllo 👋"}'),
            content("🙂")
        ]
    },
    {
        name: "only whitespace before the end",
        options: maple,
        text: "\n\n  ",
        expected: []
    }
];

/** Runs the parser over `pieces`, returning each push's parts and the flush's as the last entry. */
function runPieces(options: OutputParserOptions, pieces: readonly string[]): OutputPart[][] {
    const parser = new ChatOutputParser(options);
    const batches = pieces.map((piece) => parser.push(piece));
    batches.push(parser.flush());
    return batches;
}

/** Concatenates parts, merging adjacent text of the same type (the order the client sees). */
function merge(parts: readonly OutputPart[]): OutputPart[] {
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
function assertNoPartialMarkerBefore(emitted: readonly OutputPart[], text: string, cut: number): void {
    const last = texts(emitted).at(-1);
    if (last === undefined) return;
    const start = text.lastIndexOf(last, cut - last.length);
    assert.ok(start >= 0, `${JSON.stringify(last)} is not a piece of the raw text before ${cut}`);
    const rest = text.slice(start + last.length);
    for (const marker of MARKERS) {
        for (let size = 1; size < marker.length; size++) {
            if (last.endsWith(marker.slice(0, size)) && rest.startsWith(marker.slice(size))) {
                assert.fail(`emitted ${JSON.stringify(last)} ends with the start of ${marker}`);
            }
        }
    }
}

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

describe("ChatOutputParser", () => {
    for (const fixture of fixtures) {
        describe(fixture.name, () => {
            const { options, text, expected } = fixture;

            it("gives the expected parts in one push", () => {
                assert.deepEqual(merge(runPieces(options, [text]).flat()), expected);
            });

            it("gives the same parts split at every boundary, and never emits what it must retract", () => {
                for (let cut = 0; cut <= text.length; cut++) {
                    const [first = [], ...others] = runPieces(options, [text.slice(0, cut), text.slice(cut)]);
                    assert.deepEqual(merge([...first, ...others.flat()]), expected, `split at ${cut}`);
                    assert.ok(isStreamPrefix(first, expected), `first piece at ${cut} emitted ${JSON.stringify(first)}`);
                    if (!fixture.markersInOutput) assertNoPartialMarkerBefore(first, text, cut);
                }
            });

            it("gives the same parts fed one UTF-16 unit and one code point at a time", () => {
                const units = runPieces(options, text.split(""));
                assert.deepEqual(merge(units.flat()), expected);
                for (const part of texts(units.flat())) assert.doesNotMatch(part, loneSurrogate);
                assert.deepEqual(merge(runPieces(options, Array.from(text)).flat()), expected);
            });

            if (!fixture.markersInOutput) {
                it("never emits a marker", () => {
                    for (const part of texts(runPieces(options, Array.from(text)).flat())) {
                        for (const marker of MARKERS) assert.ok(!part.includes(marker), `${JSON.stringify(part)} has ${marker}`);
                    }
                });
            }
        });
    }

    it("holds back a possible marker until it is decided", () => {
        const parser = new ChatOutputParser(mapleWithTools);
        assert.deepEqual(parser.push("Thinking </thi"), [reasoning("Thinking")]);
        assert.deepEqual(parser.push("nk>\n\nHi <tool_"), [content("Hi")]);
        assert.deepEqual(parser.push("cal"), []);
        assert.deepEqual(parser.push("l>"), []);
        assert.deepEqual(parser.push('{"name": "f"}</tool_call>'), [toolCall("f", "{}")]);
        assert.deepEqual(parser.flush(), []);
    });

    it("merges adjacent parts of the same type within one push", () => {
        const parser = new ChatOutputParser(maple);
        assert.deepEqual(parser.push("a</think>b"), [reasoning("a"), content("b")]);
        assert.deepEqual(parser.push("c"), [content("c")]);
    });

    it("rejects push after flush, and a second flush gives nothing", () => {
        const parser = new ChatOutputParser(maple);
        assert.deepEqual(parser.push("tail </thi"), [reasoning("tail")]);
        assert.deepEqual(parser.flush(), [reasoning(" </thi")]);
        assert.deepEqual(parser.flush(), []);
        assert.throws(() => parser.push("more"));
    });
});

describe("parseToolCallBody", () => {
    it("re-serialises object arguments", () => {
        assert.deepEqual(parseToolCallBody('\n{"name": "f", "arguments": {"a": [1, 2], "b": null}}\n'), {
            name: "f",
            arguments: '{"a":[1,2],"b":null}'
        });
    });

    it("gives {} for absent or null arguments", () => {
        assert.deepEqual(parseToolCallBody('{"name": "f"}'), { name: "f", arguments: "{}" });
        assert.deepEqual(parseToolCallBody('{"name": "f", "arguments": null}'), { name: "f", arguments: "{}" });
    });

    it("keeps arguments given as a string of JSON", () => {
        assert.deepEqual(parseToolCallBody('{"name": "f", "arguments": "{ \\"x\\": 1 }"}'), {
            name: "f",
            arguments: '{ "x": 1 }'
        });
    });

    it("refuses what a client could not run", () => {
        for (const body of [
            "{not json}",
            "[]",
            '{"arguments": {}}',
            '{"name": 3}',
            '{"name": ""}',
            '{"name": "f", "arguments": [1]}',
            '{"name": "f", "arguments": "not json"}',
            '{"name": "f", "arguments": 5}'
        ]) {
            assert.equal(parseToolCallBody(body), undefined, body);
        }
    });
});

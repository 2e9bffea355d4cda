import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseToolCallBody } from "../../src/chatFormat/toolCallBody.js";
import { hermesParser } from "../helpers/hermesParser.js";
import { content, reasoning, replayFixtures, toolCall, type ReplayFixture } from "./replay.js";

const MARKERS = ["<think>", "</think>", "<tool_call>", "</tool_call>"];

type HermesOptions = Parameters<typeof hermesParser>[0];

const maple: HermesOptions = { startsInReasoning: true, parseToolCalls: false };
const mapleWithTools: HermesOptions = { startsInReasoning: true, parseToolCalls: true };
const stockQwen3: HermesOptions = { startsInReasoning: false, parseToolCalls: false };
const stockQwen3WithTools: HermesOptions = { startsInReasoning: false, parseToolCalls: true };

const fixtures: ReplayFixture<HermesOptions>[] = [
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

describe("the Hermes/Qwen3 output parser", () => {
    replayFixtures(fixtures, hermesParser, MARKERS);

    it("holds back a possible marker until it is decided", () => {
        const parser = hermesParser(mapleWithTools);
        assert.deepEqual(parser.push("Thinking </thi"), [reasoning("Thinking")]);
        assert.deepEqual(parser.push("nk>\n\nHi <tool_"), [content("Hi")]);
        assert.deepEqual(parser.push("cal"), []);
        assert.deepEqual(parser.push("l>"), []);
        assert.deepEqual(parser.push('{"name": "f"}</tool_call>'), [toolCall("f", "{}")]);
        assert.deepEqual(parser.flush(), []);
    });

    it("merges adjacent parts of the same type within one push", () => {
        const parser = hermesParser(maple);
        assert.deepEqual(parser.push("a</think>b"), [reasoning("a"), content("b")]);
        assert.deepEqual(parser.push("c"), [content("c")]);
    });

    it("rejects push after flush, and a second flush gives nothing", () => {
        const parser = hermesParser(maple);
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

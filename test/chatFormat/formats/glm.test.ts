import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { OutputParserOptions } from "../../../src/chatFormat/formats/chatFormat.js";
import { buildChatPrompt, type ChatPromptRequest } from "../../../src/chatFormat/chatPrompt.js";
import { glmFormat } from "../../../src/chatFormat/formats/glm.js";
import type { ChatMessage, ToolDefinition } from "../../../src/chatFormat/types.js";
import { answerGbnf, answerRules, type JsonRules } from "../../../src/grammar/answerGrammar.js";
import { realTemplate } from "../../helpers/chatTemplates.js";
import { content, reasoning, replayFixtures, toolCall, type ReplayFixture } from "../replay.js";

const weather: ToolDefinition = { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" }, hourly: { type: "boolean" } } } };
const tools: OutputParserOptions = { startsInReasoning: false, tools: [weather] };

const MARKERS = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"];

const fixtures: ReplayFixture<OutputParserOptions>[] = [
    {
        name: "reasoning, text, then two calls, values read by the schema",
        options: tools,
        text: "\n<think>Two cities.</think>\nChecking both.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Lagos</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"
            + "\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Accra</arg_value>\n<arg_key>hourly</arg_key>\n<arg_value>true</arg_value>\n</tool_call>",
        expected: [reasoning("Two cities."), content("Checking both."), toolCall("get_weather", '{"city":"Lagos","days":3}'), toolCall("get_weather", '{"city":"Accra","hourly":true}')]
    },
    {
        name: "GLM-4.7's one-line calls",
        options: tools,
        text: "Checking.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Lagos</arg_value></tool_call>",
        expected: [content("Checking."), toolCall("get_weather", '{"city":"Lagos"}')]
    },
    {
        name: "a call without arguments",
        options: tools,
        text: "<think></think>\n<tool_call>get_time\n</tool_call>",
        expected: [toolCall("get_time", "{}")]
    },
    {
        name: "a Hermes-style JSON body is not GLM's: content",
        options: tools,
        text: '<tool_call>{"name": "get_weather"}</tool_call>',
        expected: [content('<tool_call>{"name": "get_weather"}</tool_call>')],
        markersInOutput: true
    },
    {
        name: "an empty think block, then an answer",
        options: tools,
        text: "\n<think></think>\nIt is sunny.",
        expected: [content("It is sunny.")]
    }
];

describe("the GLM-4.5 output parser", () => {
    replayFixtures(fixtures, (options) => glmFormat.createParser(options), MARKERS);
});

describe("GLM's templates through the glm4.5 format", () => {
    const messages: ChatMessage[] = [
        { role: "user", content: "Weather in Lagos?" },
        { role: "assistant", content: null, reasoningContent: "Need the tool.", toolCalls: [{ id: "c1", name: "get_weather", arguments: '{"city":"Lagos","days":2}' }] },
        { role: "tool", content: "31C", toolCallId: "c1" }
    ];
    const request = (fields: Partial<ChatPromptRequest> = {}): ChatPromptRequest => ({ messages, tools: [weather], templateKwargs: {}, reasoning: undefined, ...fields });

    it("renders a past call as <arg_key> / <arg_value> pairs with its reasoning, and its result as an observation", () => {
        const layouts = {
            "GLM-4.6.jinja": "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Lagos</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
            // GLM-4.7 writes its calls on one line (the parser reads both; an enforced call is written as 4.5 / 4.6 write it).
            "GLM-4.7-Flash.jinja": "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Lagos</arg_value><arg_key>days</arg_key><arg_value>2</arg_value></tool_call>"
        };
        for (const [file, call] of Object.entries(layouts)) {
            const prompt = buildChatPrompt({ template: realTemplate(file), bosToken: "", eosToken: "<|endoftext|>", format: glmFormat }, request()).text;
            assert.ok(prompt.includes(call), `${file}: ${prompt}`);
            assert.ok(prompt.includes("<think>Need the tool.</think>"), file);
            assert.match(prompt, /<\|observation\|>\n?<tool_response>\n?31C\n?<\/tool_response>/, file);
        }
    });

    it("turns thinking off with enable_thinking (an empty think block in the prompt)", () => {
        const source = { template: realTemplate("GLM-4.6.jinja"), bosToken: "", eosToken: "<|endoftext|>", format: glmFormat };
        const off = buildChatPrompt(source, request({ messages: messages.slice(0, 1), reasoning: { enabled: false } }));
        assert.ok(off.text.endsWith("<|assistant|>\n<think></think>"), off.text);
        assert.deepEqual([off.startsInReasoning, off.mayOpenReasoning], [false, false]);
        const on = buildChatPrompt(source, request({ messages: messages.slice(0, 1) }));
        assert.deepEqual([on.startsInReasoning, on.mayOpenReasoning], [false, true]);
    });

    it("enforces calls in GLM's syntax", async () => {
        const rules: JsonRules = async (_schema, prefix) => `${prefix}maple-json ::= "1"`;
        const answer = await answerRules({ toolCalls: { tools: [{ name: "get_weather", parameters: weather.parameters as never }], parallel: false } }, glmFormat.grammar, rules);
        const gbnf = answerGbnf(answer, '""', undefined);
        assert.match(gbnf, /^maple-call-0 ::= "<tool_call>get_weather" tool0-args "\\n<\/tool_call>"$/m);
        assert.match(gbnf, /^tool0-args ::= "\\n<arg_key>city<\/arg_key>\\n<arg_value>" tool0-args-value0 "<\/arg_value>" /m);
    });
});

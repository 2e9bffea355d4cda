import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildChatPrompt, type ChatPromptRequest } from "../../../src/chatFormat/chatPrompt.js";
import type { OutputParserOptions } from "../../../src/chatFormat/formats/chatFormat.js";
import { genericFormat, toolInstructions } from "../../../src/chatFormat/formats/generic.js";
import type { ChatMessage, ToolDefinition } from "../../../src/chatFormat/types.js";
import { answerGbnf, answerRules, type JsonRules } from "../../../src/grammar/answerGrammar.js";
import { toGrammarSchema } from "../../../src/grammar/jsonSchemaSubset.js";
import { realTemplate } from "../../helpers/chatTemplates.js";
import { content, reasoning, replayFixtures, toolCall, type ReplayFixture } from "../replay.js";

const weather: ToolDefinition = { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } };
const tools: OutputParserOptions = { startsInReasoning: false, tools: [weather] };
const noTools: OutputParserOptions = { startsInReasoning: false, tools: [] };

const fixtures: ReplayFixture<OutputParserOptions>[] = [
    {
        name: "a response is content, its escapes decoded",
        decoded: true,
        options: tools,
        text: '{"response": "Sunny, 31\\u00b0C \\"hot\\"\\n\\ud83c\\udf1e \u00e9t\u00e9 \ud83c\udf0d"}',
        expected: [content('Sunny, 31\u00b0C "hot"\n\ud83c\udf1e \u00e9t\u00e9 \ud83c\udf0d')]
    },
    {
        name: "tool calls, whitespace around the envelope dropped",
        options: tools,
        text: ' \n{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Lagos"}, "id": "call_1"}, {"name": "get_weather", "arguments": {"city": "A}ccra\\""}}]}\n',
        expected: [toolCall("get_weather", '{"city":"Lagos"}'), toolCall("get_weather", '{"city":"A}ccra\\""}')]
    },
    {
        name: "llama.cpp's singular tool_call",
        options: tools,
        text: '{ "tool_call" : {"name": "get_weather", "arguments": {}} }',
        expected: [toolCall("get_weather", "{}")]
    },
    {
        name: "content beside calls (a past turn's shape) comes first",
        decoded: true,
        options: tools,
        text: '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Lagos"}}], "content": "Checking."}',
        expected: [content("Checking."), toolCall("get_weather", '{"city":"Lagos"}')]
    },
    {
        name: "a JSON response (response_format beside tools) is its JSON text",
        decoded: true,
        options: tools,
        text: '{"response": {"temp": 31, "unit": "C"}}',
        expected: [content('{"temp":31,"unit":"C"}')]
    },
    {
        name: "an object that is no envelope stays content, verbatim",
        options: tools,
        text: '{"answer": 42}',
        expected: [content('{"answer": 42}')]
    },
    {
        name: "plain text (no grammar: a model ignoring the instructions) is content",
        options: tools,
        text: "  The weather is fine.",
        expected: [content("  The weather is fine.")]
    },
    {
        name: "text after a response is content",
        decoded: true,
        options: tools,
        text: '{"response": "Hi"} and more',
        expected: [content("Hi and more")]
    },
    {
        name: "a response cut off by the token limit keeps what was decoded",
        decoded: true,
        options: tools,
        text: '{"response": "Half a sent\\u00',
        expected: [content("Half a sent")]
    },
    {
        name: "calls cut off are content",
        options: tools,
        text: '{"tool_calls": [{"name": "get_weather", "argu',
        expected: [content('{"tool_calls": [{"name": "get_weather", "argu')]
    },
    {
        name: "reasoning in <think>, then the envelope",
        decoded: true,
        options: tools,
        text: '<think>\nThe user wants weather.\n</think>\n\n{"response": "Sunny."}',
        expected: [reasoning("The user wants weather."), content("Sunny.")]
    },
    {
        name: "no tools: the envelope is plain content",
        options: noTools,
        text: '{"response": "Hi"}',
        expected: [content('{"response": "Hi"}')]
    }
];

describe("the generic output parser", () => {
    replayFixtures(fixtures, (options) => genericFormat.createParser(options), ["<think>", "</think>"]);
});

describe("Gemma 3's template through the generic format", () => {
    const template = realTemplate("google-gemma-3-4b-it.jinja");
    const source = { template, bosToken: "<bos>", eosToken: "<eos>", format: genericFormat };
    const messages: ChatMessage[] = [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Weather in Lagos and Accra?" },
        {
            role: "assistant", content: null,
            toolCalls: [{ id: "a", name: "get_weather", arguments: '{"city":"Lagos"}' }, { id: "b", name: "get_weather", arguments: '{"city":"Accra"}' }]
        },
        { role: "tool", content: "31C", toolCallId: "a" },
        { role: "tool", content: "29C", toolCallId: "b" }
    ];
    const request: ChatPromptRequest = { messages, tools: [weather], templateKwargs: {}, reasoning: undefined };

    it("shows the tools in the system text, which the template folds into the first user turn", () => {
        const prompt = buildChatPrompt(source, request);
        assert.ok(prompt.text.startsWith(`<bos><start_of_turn>user\nBe brief.\n\n${toolInstructions([weather])}\n\nWeather in Lagos and Accra?<end_of_turn>\n`), prompt.text);
        assert.ok(prompt.text.includes('"name": "get_weather"'));
        assert.deepEqual([prompt.startsInReasoning, prompt.mayOpenReasoning], [false, true]);
    });

    it("renders past calls as the model's JSON and both results as one user turn (Gemma's roles must alternate)", () => {
        const prompt = buildChatPrompt(source, request);
        const calls = JSON.stringify({ tool_calls: [{ name: "get_weather", arguments: { city: "Lagos" }, id: "a" }, { name: "get_weather", arguments: { city: "Accra" }, id: "b" }] }, null, 2);
        const results = [["a", "31C"], ["b", "29C"]].map(([id, text]) => JSON.stringify({ tool_response: { tool: "get_weather", content: text, tool_call_id: id } }, null, 2)).join("\n");
        assert.ok(prompt.text.endsWith(`<start_of_turn>model\n${calls}<end_of_turn>\n<start_of_turn>user\n${results}<end_of_turn>\n<start_of_turn>model\n`), prompt.text);
    });

    it("leaves a conversation without tools as the template renders it", () => {
        const plain: ChatPromptRequest = { messages: [{ role: "user", content: "Hi" }], tools: [], templateKwargs: {}, reasoning: undefined };
        assert.equal(buildChatPrompt(source, plain).text, "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
    });

    it("folds system text into the first user turn for Gemma 2, whose template raises on a system message", () => {
        const gemma2 = { ...source, template: realTemplate("google-gemma-2-2b-it.jinja") };
        const prompt = buildChatPrompt(gemma2, { ...request, messages: messages.slice(0, 2) });
        assert.ok(prompt.text.startsWith(`<bos><start_of_turn>user\nBe brief.\n\n${toolInstructions([weather])}\n\nWeather in Lagos and Accra?<end_of_turn>\n`), prompt.text);
    });
});

describe("the generic format's grammar", () => {
    const rules: JsonRules = async (schema, prefix) => `${prefix}maple-json ::= ${JSON.stringify(JSON.stringify(schema))}`;
    const callable = { tools: [{ name: "get_weather", parameters: toGrammarSchema(weather.parameters) }], parallel: true };

    it("beside tools the model may call, the answer is the response envelope or the calls", async () => {
        const answer = await answerRules(genericFormat.freeAnswer!(callable), genericFormat.grammar, rules);
        const gbnf = answerGbnf(answer, '""', undefined);
        assert.match(gbnf, /^maple-body ::= \( "\{\\"response\\": " maple-json "}" \) \| \( maple-calls \)$/m);
        assert.match(gbnf, /^maple-calls ::= "\{\\"tool_calls\\": \[" call-maple-json \( ", " call-maple-json \)\* "]}"$/m);
        assert.ok(gbnf.includes('maple-json ::= "{\\"type\\":\\"string\\"}"'));
    });

    it("enforced calls are the calls only, one when parallel calls are off; a JSON answer alone is bare", async () => {
        const calls = answerGbnf(await answerRules({ toolCalls: { ...callable, parallel: false } }, genericFormat.grammar, rules), '""', undefined);
        assert.match(calls, /^maple-body ::= \( maple-calls \)$/m);
        assert.match(calls, /^maple-calls ::= "\{\\"tool_calls\\": \[" call-maple-json "]}"$/m);
        const json = answerGbnf(await answerRules({ json: { schema: undefined } }, genericFormat.grammar, rules), '""', undefined);
        assert.match(json, /^maple-body ::= \( maple-json \)$/m);
    });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { OutputParserOptions } from "../../../src/chatFormat/formats/chatFormat.js";
import { buildChatPrompt, type ChatPromptRequest } from "../../../src/chatFormat/chatPrompt.js";
import { llama3Format } from "../../../src/chatFormat/formats/llama3.js";
import type { ChatMessage, ToolDefinition } from "../../../src/chatFormat/types.js";
import { answerGbnf, answerRules, type JsonRules } from "../../../src/grammar/answerGrammar.js";
import { realTemplate } from "../../helpers/chatTemplates.js";
import { content, replayFixtures, toolCall, type ReplayFixture } from "../replay.js";

const weather: ToolDefinition = { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } };
const python: ToolDefinition = { name: "python", parameters: { type: "object", properties: { code: { type: "string" } } } };

const tools: OutputParserOptions = { startsInReasoning: false, tools: [weather, python] };
const noTools: OutputParserOptions = { startsInReasoning: false, tools: [] };

const fixtures: ReplayFixture<OutputParserOptions>[] = [
    {
        name: "the whole answer is one JSON call",
        options: tools,
        text: '{"name": "get_weather", "parameters": {"city": "Lagos"}}',
        expected: [toolCall("get_weather", '{"city":"Lagos"}')]
    },
    {
        name: "whitespace first, type function, and two calls separated by ;",
        options: tools,
        text: '\n {"type": "function", "name": "get_weather", "parameters": {"city": "Lagos"}}; {"name": "get_weather", "arguments": {"city": "Accra"}}\n',
        expected: [toolCall("get_weather", '{"city":"Lagos"}'), toolCall("get_weather", '{"city":"Accra"}')]
    },
    {
        name: "a JSON answer that is no call is content, streamed as soon as it cannot be one",
        options: tools,
        text: '{"answer": 42, "unit": "apples"}',
        expected: [content('{"answer": 42, "unit": "apples"}')]
    },
    {
        name: "text, then JSON: all text (a call only opens the answer)",
        options: tools,
        text: 'Here you go: {"name": "get_weather", "parameters": {}}',
        expected: [content('Here you go: {"name": "get_weather", "parameters": {}}')]
    },
    {
        name: "a call followed by text is text",
        options: tools,
        text: '{"name": "get_weather", "parameters": {}} and more',
        expected: [content('{"name": "get_weather", "parameters": {}} and more')]
    },
    {
        name: "a call cut off is text",
        options: tools,
        text: '{"name": "get_weather", "parameters": {"ci',
        expected: [content('{"name": "get_weather", "parameters": {"ci')]
    },
    {
        name: "a built-in tool after <|python_tag|>",
        options: tools,
        text: '<|python_tag|>brave_search.call(query="weather in Lagos", topn=3)',
        expected: [toolCall("brave_search", '{"query":"weather in Lagos","topn":3}')]
    },
    {
        name: "code after <|python_tag|> is a call to the python tool",
        options: tools,
        text: "<|python_tag|>print(1 + 1)",
        expected: [toolCall("python", '{"code":"print(1 + 1)"}')]
    },
    {
        name: "no tools: a JSON call is content",
        options: noTools,
        text: '{"name": "get_weather", "parameters": {"city": "Lagos"}}',
        expected: [content('{"name": "get_weather", "parameters": {"city": "Lagos"}}')]
    },
    {
        name: "plain answers keep their whitespace",
        options: tools,
        text: "  The weather is fine.\n",
        expected: [content("  The weather is fine.\n")]
    }
];

describe("the Llama 3.x output parser", () => {
    replayFixtures(fixtures, (options) => llama3Format.createParser(options), ["<|python_tag|>"]);

    it("never reasons", () => {
        const parser = llama3Format.createParser({ startsInReasoning: true, tools: [] });
        assert.equal(parser.inReasoning, false);
        assert.deepEqual(parser.push("<think>x</think>y"), [content("<think>x</think>y")]);
    });
});

describe("Llama 3.1's template through the llama3 format", () => {
    const messages: ChatMessage[] = [
        { role: "user", content: "Weather in Lagos and Accra?" },
        {
            role: "assistant", content: null,
            toolCalls: [{ id: "a", name: "get_weather", arguments: '{"city":"Lagos"}' }, { id: "b", name: "get_weather", arguments: '{"city":"Accra"}' }]
        },
        { role: "tool", content: "31C", toolCallId: "a" },
        { role: "tool", content: "29C", toolCallId: "b" }
    ];
    const request: ChatPromptRequest = { messages, tools: [weather], templateKwargs: {}, reasoning: { enabled: true, effort: "high" } };

    it("renders two calls as two turns (the template takes one), each followed by its result, in Llama's JSON", () => {
        const prompt = buildChatPrompt({ template: realTemplate("meta-llama-Llama-3.1-8B-Instruct.jinja"), bosToken: "<|begin_of_text|>", eosToken: "<|eot_id|>", format: llama3Format }, request);
        assert.ok(prompt.text.includes('<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_weather", "parameters": {"city": "Lagos"}}<|eot_id|>'
            + '<|start_header_id|>ipython<|end_header_id|>\n\n"31C"<|eot_id|>'
            + '<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_weather", "parameters": {"city": "Accra"}}<|eot_id|>'), prompt.text);
        assert.deepEqual([prompt.startsInReasoning, prompt.mayOpenReasoning], [false, false]);
    });

    it("enforces calls as Llama's JSON, and has no reasoning to budget", async () => {
        const rules: JsonRules = async (schema, prefix) => `${prefix}maple-json ::= ${JSON.stringify(JSON.stringify(schema))}`;
        const answer = await answerRules({ toolCalls: { tools: [{ name: "get_weather", parameters: {} as never }], parallel: true } }, llama3Format.grammar, rules);
        const gbnf = answerGbnf(answer, '""', llama3Format.grammar.reasoningOpen);
        assert.match(gbnf, /^maple-calls ::= call-maple-json \( "\\n" call-maple-json \)\*$/m);
        assert.ok(gbnf.includes('\\"parameters\\"'));
        assert.doesNotMatch(gbnf, /maple-free/);
        assert.equal(llama3Format.grammar.closeReasoning, undefined);
    });
});

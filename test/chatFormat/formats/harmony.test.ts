import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { OutputParserOptions } from "../../../src/chatFormat/formats/chatFormat.js";
import { buildChatPrompt, type ChatPromptRequest } from "../../../src/chatFormat/chatPrompt.js";
import { harmonyFormat } from "../../../src/chatFormat/formats/harmony.js";
import type { ChatMessage, ToolDefinition } from "../../../src/chatFormat/types.js";
import { answerGbnf, answerRules, type JsonRules } from "../../../src/grammar/answerGrammar.js";
import { realTemplate } from "../../helpers/chatTemplates.js";
import { content, reasoning, replayFixtures, toolCall, type ReplayFixture } from "../replay.js";

const weather: ToolDefinition = { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };
const time: ToolDefinition = { name: "get_time", parameters: { type: "object", properties: {} } };

const withTools: OutputParserOptions = { startsInReasoning: false, tools: [weather, time] };
const noTools: OutputParserOptions = { startsInReasoning: false, tools: [] };

const MARKERS = ["<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|call|>", "<|return|>", "<|constrain|>"];

/** gpt-oss outputs, as the generation's text holds them (its <|call|> and <|return|> end the generation, so usually absent). */
const fixtures: ReplayFixture<OutputParserOptions>[] = [
    {
        name: "analysis, then the final answer",
        options: noTools,
        text: "<|channel|>analysis<|message|>User asks 17*23. 17*20 = 340, 17*3 = 51.<|end|><|start|>assistant<|channel|>final<|message|>391",
        expected: [reasoning("User asks 17*23. 17*20 = 340, 17*3 = 51."), content("391")]
    },
    {
        name: "a final answer that keeps its whitespace and ends with <|return|>",
        options: noTools,
        text: "<|channel|>analysis<|message|>ok<|end|><|start|>assistant<|channel|>final<|message|>Line one\n\nLine two\n<|return|>",
        expected: [reasoning("ok"), content("Line one\n\nLine two\n")]
    },
    {
        name: "a tool call to functions.NAME, its <|call|> ending the generation",
        options: withTools,
        text: "<|channel|>analysis<|message|>Need the weather tool.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Lagos\"}",
        expected: [reasoning("Need the weather tool."), toolCall("get_weather", '{"city":"Lagos"}')]
    },
    {
        name: "two calls, <|call|> written as text between them (as a model without harmony's tokens writes it)",
        options: withTools,
        text: "<|channel|>analysis<|message|>Two.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Lagos\"}<|call|>"
            + "<|start|>assistant<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}<|call|>",
        expected: [reasoning("Two."), toolCall("get_weather", '{"city":"Lagos"}'), toolCall("get_time", "{}")]
    },
    {
        name: "the recipient in the role header, without <|constrain|> (how the template renders past calls)",
        options: withTools,
        text: " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Accra\"}",
        expected: [toolCall("get_weather", '{"city":"Accra"}')]
    },
    {
        name: "a commentary preamble before the call is content; analysis after it is reasoning",
        options: withTools,
        text: "<|channel|>analysis<|message|>Plan.<|end|><|start|>assistant<|channel|>commentary<|message|>Let me check.<|end|>"
            + "<|start|>assistant<|channel|>analysis<|message|>Now call.<|end|><|start|>assistant<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}",
        expected: [reasoning("Plan."), content("Let me check."), reasoning("Now call."), toolCall("get_time", "{}")]
    },
    {
        name: "a call when no tools were offered is content (its arguments), never markup",
        options: noTools,
        text: "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Lagos\"}",
        expected: [content('{"city": "Lagos"}')]
    },
    {
        name: "a call whose arguments are not a JSON object is content",
        options: withTools,
        text: "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>[1, 2]",
        expected: [content("[1, 2]")]
    },
    {
        name: "a message to a built-in tool (browser) is dropped",
        options: withTools,
        text: "<|channel|>analysis<|message|>Search.<|end|><|start|>assistant<|channel|>commentary to=browser.search <|constrain|>json<|message|>{\"query\": \"maple\"}",
        expected: [reasoning("Search.")]
    },
    {
        name: "the prompt opened the analysis channel",
        options: { startsInReasoning: true, tools: [] },
        text: "thinking<|end|><|start|>assistant<|channel|>final<|message|>ok",
        expected: [reasoning("thinking"), content("ok")]
    },
    {
        name: "cut off mid-analysis, inside an end marker",
        options: noTools,
        text: "<|channel|>analysis<|message|>Almost done <|en",
        expected: [reasoning("Almost done <|en")]
    },
    {
        name: "cut off inside a header: the markup is dropped",
        options: noTools,
        text: "<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>fin",
        expected: [reasoning("r")]
    },
    {
        name: "stray text between messages is content, up to the next <|start|>",
        options: withTools,
        text: "<|channel|>analysis<|message|>r<|end|>'.<|start|>assistant<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}",
        expected: [reasoning("r"), content("'."), toolCall("get_time", "{}")]
    },
    {
        name: "output that is not harmony at all is content, streamed",
        options: withTools,
        text: "Hello there, <|channel|> is a token name.",
        expected: [content("Hello there, <|channel|> is a token name.")],
        markersInOutput: true
    },
    {
        name: "unicode and emoji next to markers",
        options: noTools,
        text: "<|channel|>analysis<|message|>思考中… 🤔<|end|><|start|>assistant<|channel|>final<|message|>答案 🎉",
        expected: [reasoning("思考中… 🤔"), content("答案 🎉")]
    }
];

describe("the harmony (gpt-oss) output parser", () => {
    replayFixtures(fixtures, (options) => harmonyFormat.createParser(options), MARKERS);

    it("is in reasoning only inside an analysis body", () => {
        const parser = harmonyFormat.createParser(noTools);
        assert.equal(parser.inReasoning, false);
        parser.push("<|channel|>analysis<|message|>");
        assert.equal(parser.inReasoning, true);
        parser.push("x<|end|>");
        assert.equal(parser.inReasoning, false);
    });
});

describe("gpt-oss's template through the harmony format", () => {
    const template = realTemplate("openai-gpt-oss-120b.jinja");
    const source = { template, bosToken: "<|startoftext|>", eosToken: "<|return|>", format: harmonyFormat };
    const request = (fields: Partial<ChatPromptRequest>): ChatPromptRequest => ({
        messages: [{ role: "user", content: "Weather in Lagos?" }], tools: [], templateKwargs: {}, reasoning: undefined, ...fields
    });

    it("reaches the template's reasoning_effort from the reasoning switch (off is low, the least gpt-oss has)", () => {
        assert.match(buildChatPrompt(source, request({})).text, /Reasoning: medium\n/);
        assert.match(buildChatPrompt(source, request({ reasoning: { enabled: true, effort: "high" } })).text, /Reasoning: high\n/);
        assert.match(buildChatPrompt(source, request({ reasoning: { enabled: false } })).text, /Reasoning: low\n/);
        assert.match(buildChatPrompt(source, request({ reasoning: { enabled: true, effort: "high" }, templateKwargs: { reasoning_effort: "low" } })).text, /Reasoning: low\n/);
    });

    it("ends the prompt with <|start|>assistant: the model opens its analysis itself", () => {
        const prompt = buildChatPrompt(source, request({}));
        assert.ok(prompt.text.endsWith("<|start|>assistant"));
        assert.deepEqual([prompt.startsInReasoning, prompt.mayOpenReasoning], [false, true]);
    });

    it("renders a two-call turn as one call per message, each followed by its result, the reasoning as the analysis", () => {
        const messages: ChatMessage[] = [
            { role: "user", content: "Weather and time?" },
            {
                role: "assistant", content: null, reasoningContent: "Two tools.",
                toolCalls: [{ id: "a", name: "get_weather", arguments: '{"city":"Lagos"}' }, { id: "b", name: "get_time", arguments: "{}" }]
            },
            // Results in the other order: matched by id.
            { role: "tool", content: "12:00", toolCallId: "b" },
            { role: "tool", content: "31C", toolCallId: "a" }
        ];
        const text = buildChatPrompt(source, request({ messages, tools: [weather, time] })).text;
        const turn = text.slice(text.indexOf("<|start|>user<|message|>Weather and time?<|end|>") + "<|start|>user<|message|>Weather and time?<|end|>".length);
        assert.equal(turn, [
            "<|start|>assistant<|channel|>analysis<|message|>Two tools.<|end|>",
            "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Lagos\"}<|call|>",
            "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>\"31C\"<|end|>",
            "<|start|>assistant to=functions.get_time<|channel|>commentary json<|message|>{}<|call|>",
            "<|start|>functions.get_time to=assistant<|channel|>commentary<|message|>\"12:00\"<|end|>",
            "<|start|>assistant"
        ].join(""));
        // A tool without a description renders (the template itself would fail on it).
        assert.match(text, /namespace functions \{\n\n\/\/ \ntype get_weather = \(_: \{\ncity: string,\n\}\) => any;/);
    });
});

describe("the harmony grammar", () => {
    const rules: JsonRules = async (_schema, prefix) => `${prefix}maple-json ::= "{}"`;

    it("writes one commentary call to functions.NAME, after a new assistant message when the model reasoned first", async () => {
        const answer = await answerRules({ toolCalls: { tools: [{ name: "get_weather", parameters: {} as never }, { name: "get_time", parameters: {} as never }], parallel: true } },
            harmonyFormat.grammar, rules);
        const gbnf = answerGbnf(answer, harmonyFormat.grammar.afterReasoning, undefined);
        assert.match(gbnf, /^maple-lead ::= "<\|start\|>assistant"$/m);
        assert.match(gbnf, /^maple-calls ::= maple-call$/m);
        assert.match(gbnf, /^maple-call ::= maple-call-0 \| maple-call-1$/m);
        assert.match(gbnf, /^maple-call-0 ::= "<\|channel\|>commentary to=functions.get_weather <\|constrain\|>json<\|message\|>" tool0-maple-json$/m);
        const first = answerGbnf(await answerRules({ json: { schema: undefined } }, harmonyFormat.grammar, rules), '""', harmonyFormat.grammar.reasoningOpen);
        assert.match(first, /^maple-body ::= \( "<\|channel\|>final<\|message\|>" maple-json \)$/m);
        assert.match(first, /"<\|channel\|>analysis<\|message\|>" maple-free/);
        assert.equal(harmonyFormat.grammar.closeReasoning, "<|end|>");
    });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { OutputParserOptions } from "../../../src/chatFormat/formats/chatFormat.js";
import { buildChatPrompt, type ChatPromptRequest } from "../../../src/chatFormat/chatPrompt.js";
import { qwen3CoderFormat } from "../../../src/chatFormat/formats/qwen3Coder.js";
import type { ChatMessage, ToolDefinition } from "../../../src/chatFormat/types.js";
import { answerGbnf, answerRules, type JsonRules } from "../../../src/grammar/answerGrammar.js";
import { realTemplate } from "../../helpers/chatTemplates.js";
import { content, reasoning, replayFixtures, toolCall, type ReplayFixture } from "../replay.js";

const weather: ToolDefinition = { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } }, required: ["city"] } };
const write: ToolDefinition = {
    name: "write_file",
    parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" }, append: { type: "boolean" }, meta: { type: "object" } } }
};

const coder: OutputParserOptions = { startsInReasoning: false, tools: [weather, write] };
const thinking: OutputParserOptions = { startsInReasoning: true, tools: [weather, write] };

const MARKERS = ["<think>", "</think>", "<tool_call>", "</tool_call>"];

const call = (name: string, parameters: string): string => `<tool_call>\n<function=${name}>\n${parameters}</function>\n</tool_call>`;
const parameter = (key: string, value: string): string => `<parameter=${key}>\n${value}\n</parameter>\n`;

const fixtures: ReplayFixture<OutputParserOptions>[] = [
    {
        name: "one call, its values read by the schema",
        options: coder,
        text: call("get_weather", parameter("city", "Lagos") + parameter("days", "3")),
        expected: [toolCall("get_weather", '{"city":"Lagos","days":3}')]
    },
    {
        name: "text, then two calls: code with newlines and tags kept as it is, booleans and objects as JSON",
        options: coder,
        text: "Writing the file.\n\n" + call("write_file", parameter("path", "src/a.ts") + parameter("content", "if (a < b) {\n  </div>\n}") + parameter("append", "false")
        + parameter("meta", '{"by": "me"}')) + "\n" + call("get_weather", parameter("city", "Oslo")),
        expected: [
            content("Writing the file."),
            toolCall("write_file", '{"path":"src/a.ts","content":"if (a < b) {\\n  </div>\\n}","append":false,"meta":{"by":"me"}}'),
            toolCall("get_weather", '{"city":"Oslo"}')
        ]
    },
    {
        name: "Qwen3.5: reasoning opened by the prompt, then a call",
        options: thinking,
        text: "The user wants the weather.\n</think>\n\n" + call("get_weather", parameter("city", "Accra")),
        expected: [reasoning("The user wants the weather."), toolCall("get_weather", '{"city":"Accra"}')]
    },
    {
        name: "a call without parameters, and a value that is not what the schema allows (kept as text)",
        options: coder,
        text: call("get_weather", "") + call("get_weather", parameter("days", "many")),
        expected: [toolCall("get_weather", "{}"), toolCall("get_weather", '{"days":"many"}')]
    },
    {
        name: "a block that is not <function=…> stays content",
        options: coder,
        text: "Sure <tool_call>\n{\"name\": \"get_weather\"}\n</tool_call> done",
        expected: [content("Sure <tool_call>\n{\"name\": \"get_weather\"}\n</tool_call> done")],
        markersInOutput: true
    },
    {
        name: "an unclosed call at the end stays content",
        options: coder,
        text: "One moment.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nLag",
        expected: [content("One moment.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nLag")],
        markersInOutput: true
    },
    {
        name: "no tools offered: the XML is content",
        options: { startsInReasoning: false, tools: [] },
        text: call("get_weather", parameter("city", "Lagos")),
        expected: [content(call("get_weather", parameter("city", "Lagos")))],
        markersInOutput: true
    }
];

describe("the Qwen3-Coder output parser", () => {
    replayFixtures(fixtures, (options) => qwen3CoderFormat.createParser(options), MARKERS);
});

describe("Qwen3-Coder's and Qwen3.5's templates through the qwen3-coder format", () => {
    const messages: ChatMessage[] = [
        { role: "user", content: "Weather in Lagos?" },
        { role: "assistant", content: null, reasoningContent: "Tool.", toolCalls: [{ id: "c1", name: "get_weather", arguments: '{"city":"Lagos","days":2}' }] },
        { role: "tool", content: "31C", toolCallId: "c1" }
    ];
    const request = (fields: Partial<ChatPromptRequest> = {}): ChatPromptRequest => ({ messages, tools: [weather], templateKwargs: {}, reasoning: undefined, ...fields });

    it("renders a past call in the XML the parser reads, and its result as a tool response", () => {
        for (const file of ["Qwen3-Coder.jinja", "Qwen3.5-4B.jinja"]) {
            const prompt = buildChatPrompt({ template: realTemplate(file), bosToken: "", eosToken: "<|im_end|>", format: qwen3CoderFormat }, request()).text;
            assert.ok(prompt.includes("<tool_call>\n<function=get_weather>\n<parameter=city>\nLagos\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>"), `${file}: ${prompt}`);
            assert.ok(prompt.includes("<tool_response>\n31C\n</tool_response>"), file);
        }
    });

    it("Qwen3.5: the prompt opens <think>, and the reasoning switch closes it", () => {
        const source = { template: realTemplate("Qwen3.5-4B.jinja"), bosToken: "", eosToken: "<|im_end|>", format: qwen3CoderFormat };
        assert.equal(buildChatPrompt(source, request()).startsInReasoning, true);
        const off = buildChatPrompt(source, request({ reasoning: { enabled: false } }));
        assert.deepEqual([off.startsInReasoning, off.mayOpenReasoning], [false, false]);
    });

    it("writes the grammar of an enforced call in the same XML", async () => {
        const rules: JsonRules = async (_schema, prefix) => `${prefix}maple-json ::= "1"`;
        const answer = await answerRules({ toolCalls: { tools: [{ name: "get_weather", parameters: weather.parameters as never }], parallel: false } }, qwen3CoderFormat.grammar, rules);
        const gbnf = answerGbnf(answer, '""', undefined);
        assert.match(gbnf, /^maple-call-0 ::= "<tool_call>\\n<function=get_weather>\\n" tool0-args "<\/function>\\n<\/tool_call>"$/m);
        assert.match(gbnf, /^tool0-args ::= "<parameter=city>\\n" tool0-args-value0 "\\n<\/parameter>\\n" "<parameter=days>\\n" tool0-args-value1 "\\n<\/parameter>\\n"$/m);
    });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { OutputParserOptions } from "../../../src/chatFormat/formats/chatFormat.js";
import { buildChatPrompt, type ChatPromptRequest } from "../../../src/chatFormat/chatPrompt.js";
import { deepSeekR1Format, deepSeekV31Format } from "../../../src/chatFormat/formats/deepseek.js";
import type { ChatMessage, ToolDefinition } from "../../../src/chatFormat/types.js";
import { answerGbnf, answerRules, type JsonRules } from "../../../src/grammar/answerGrammar.js";
import { realTemplate } from "../../helpers/chatTemplates.js";
import { content, reasoning, replayFixtures, toolCall, type ReplayFixture } from "../replay.js";

const weather: ToolDefinition = { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } };
const thinking: OutputParserOptions = { startsInReasoning: true, tools: [weather] };
const answering: OutputParserOptions = { startsInReasoning: false, tools: [weather] };

const MARKERS = ["<think>", "</think>", "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"];

const r1Call = (name: string, args: string): string => `<｜tool▁call▁begin｜>function<｜tool▁sep｜>${name}\n\`\`\`json\n${args}\n\`\`\`<｜tool▁call▁end｜>`;
const v31Call = (name: string, args: string): string => `<｜tool▁call▁begin｜>${name}<｜tool▁sep｜>${args}<｜tool▁call▁end｜>`;

const fixtures: ReplayFixture<OutputParserOptions>[] = [
    {
        name: "R1: reasoning opened by the prompt, then two calls",
        options: thinking,
        text: `The user wants two cities.\n</think>\n\n<｜tool▁calls▁begin｜>${r1Call("get_weather", '{"city": "Lagos"}')}\n${r1Call("get_weather", '{"city": "Accra"}')}<｜tool▁calls▁end｜>`,
        expected: [reasoning("The user wants two cities."), toolCall("get_weather", '{"city":"Lagos"}'), toolCall("get_weather", '{"city":"Accra"}')]
    },
    {
        name: "V3.1: text, then calls in its syntax",
        options: answering,
        text: `Let me check.<｜tool▁calls▁begin｜>${v31Call("get_weather", '{"city": "Lagos"}')}${v31Call("get_time", "{}")}<｜tool▁calls▁end｜>`,
        expected: [content("Let me check."), toolCall("get_weather", '{"city":"Lagos"}'), toolCall("get_time", "{}")]
    },
    {
        name: "a misspelt section opening, and a section the model ends its turn in",
        options: answering,
        text: `<｜tool calls begin｜>${r1Call("get_weather", "{}")}`,
        expected: [toolCall("get_weather", "{}")]
    },
    {
        name: "a section that is no calls stays content",
        options: answering,
        text: "<｜tool▁calls▁begin｜>nothing here<｜tool▁calls▁end｜> ok",
        expected: [content("<｜tool▁calls▁begin｜>nothing here<｜tool▁calls▁end｜> ok")],
        markersInOutput: true
    },
    {
        name: "R1 thinking, then an answer",
        options: thinking,
        text: "2+2 is 4.\n</think>\n\nFour.",
        expected: [reasoning("2+2 is 4."), content("Four.")]
    }
];

describe("the DeepSeek output parser (R1 and V3.1 syntaxes)", () => {
    replayFixtures(fixtures, (options) => deepSeekR1Format.createParser(options), MARKERS);
});

describe("DeepSeek's templates", () => {
    const messages: ChatMessage[] = [
        { role: "user", content: "Weather in Lagos?" },
        { role: "assistant", content: null, toolCalls: [{ id: "c1", name: "get_weather", arguments: '{"city":"Lagos"}' }] },
        { role: "tool", content: "31C", toolCallId: "c1" }
    ];
    const request = (fields: Partial<ChatPromptRequest> = {}): ChatPromptRequest => ({ messages, tools: [weather], templateKwargs: {}, reasoning: undefined, ...fields });
    const source = (file: string, format = deepSeekR1Format): Parameters<typeof buildChatPrompt>[0] => ({ template: realTemplate(file), bosToken: "<｜begin▁of▁sentence｜>", eosToken: "<｜end▁of▁sentence｜>", format });

    it("R1 (its distills' templates, and llama.cpp's): the call in R1's syntax, no empty turn after it, arguments as each template wants them", () => {
        for (const file of ["deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", "llama-cpp-deepseek-r1.jinja"]) {
            const prompt = buildChatPrompt(source(file), request()).text;
            assert.ok(prompt.includes('<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"city'), `${file}: ${prompt}`);
            assert.ok(prompt.includes("<｜tool▁output▁begin｜>31C<｜tool▁output▁end｜>"), file);
            assert.ok(!prompt.includes("<｜Assistant｜><｜end▁of▁sentence｜>"), `${file}: an empty assistant turn`);
        }
    });

    it("V3.1: its syntax, and the reasoning switch as its `thinking`", () => {
        const off = buildChatPrompt(source("deepseek-ai-DeepSeek-V3.1.jinja", deepSeekV31Format), request({ messages: messages.slice(0, 1) }));
        assert.ok(off.text.endsWith("<｜Assistant｜><think></think>"));
        assert.deepEqual([off.startsInReasoning, off.mayOpenReasoning], [false, false]);
        const on = buildChatPrompt(source("deepseek-ai-DeepSeek-V3.1.jinja", deepSeekV31Format), request({ messages: messages.slice(0, 1), reasoning: { enabled: true, effort: "low" } }));
        assert.equal(on.startsInReasoning, true);
        const turn = buildChatPrompt(source("deepseek-ai-DeepSeek-V3.1.jinja", deepSeekV31Format), request()).text;
        assert.ok(turn.includes('<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Lagos"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>'), turn);
    });

    it("enforces calls in each syntax", async () => {
        const rules: JsonRules = async (_schema, prefix) => `${prefix}maple-json ::= "{}"`;
        const constraint = { toolCalls: { tools: [{ name: "get_weather", parameters: {} as never }], parallel: true } };
        const r1 = answerGbnf(await answerRules(constraint, deepSeekR1Format.grammar, rules), '""', undefined);
        assert.match(r1, /^maple-calls ::= "<｜tool▁calls▁begin｜>" maple-call \( "\\n" maple-call \)\* "<｜tool▁calls▁end｜>"$/m);
        assert.match(r1, /^maple-call-0 ::= "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\\n```json\\n" tool0-maple-json "\\n```<｜tool▁call▁end｜>"$/m);
        const v31 = answerGbnf(await answerRules(constraint, deepSeekV31Format.grammar, rules), '""', undefined);
        assert.match(v31, /^maple-calls ::= "<｜tool▁calls▁begin｜>" maple-call \( maple-call \)\* "<｜tool▁calls▁end｜>"$/m);
        assert.match(v31, /^maple-call-0 ::= "<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>" tool0-maple-json "<｜tool▁call▁end｜>"$/m);
    });
});

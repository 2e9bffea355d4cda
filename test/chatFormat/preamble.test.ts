import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { hermesFormat } from "../../src/chatFormat/formats/hermes.js";
import { buildChatPrompt, type ChatPromptRequest, type ChatTemplateSource } from "../../src/chatFormat/chatPrompt.js";
import { preambleCharacters } from "../../src/chatFormat/preamble.js";
import type { ChatMessage, ToolDefinition } from "../../src/chatFormat/types.js";
import { mapleChatTemplate } from "../../src/models/synthetic/mapleChatTemplate.js";

/** A new object each call: preamble renders are cached per template source, so a fresh one computes from scratch. */
const source = (template = mapleChatTemplate): ChatTemplateSource => ({ template, bosToken: "", eosToken: "<|im_end|>", format: hermesFormat });
const tool = (name: string): ToolDefinition => ({ name, description: `The ${name} tool.`, parameters: { type: "object", properties: { path: { type: "string" } } } });
const session = (user: string, tools: ToolDefinition[] = [tool("read_file")]): ChatPromptRequest => ({
    messages: [{ role: "system", content: "You are the coder agent. Follow the house style." }, { role: "user", content: user }] satisfies ChatMessage[],
    tools,
    templateKwargs: {},
    reasoning: undefined
});
const prompt = (from: ChatTemplateSource, request: ChatPromptRequest): string => buildChatPrompt(from, request).text;

describe("preambleCharacters", () => {
    it("ends where the first user message's text begins", () => {
        const template = source();
        const request = session("Fix the failing test.");
        const text = prompt(template, request);
        const characters = preambleCharacters(template, request, text);
        assert.ok(characters !== undefined);
        assert.ok(text.slice(0, characters).endsWith("<|im_start|>user\n"), JSON.stringify(text.slice(characters - 40, characters)));
        assert.ok(text.slice(characters).startsWith("Fix the failing test."));
    });

    it("gives every session of one preamble, served from the renders kept for its template, what a fresh computation gives", () => {
        const template = source();
        for (const user of ["Fix the failing test.", "Rename the module.", "Fix the docs."]) {
            const request = session(user);
            const text = prompt(template, request);
            assert.equal(preambleCharacters(template, request, text), preambleCharacters(source(), request, text), user);
        }
    });

    it("keeps preambles apart by their tools and by the template's variables", () => {
        const template = source();
        const one = session("Go.", [tool("read_file")]);
        const two = session("Go.", [tool("read_file"), tool("run_command")]);
        const oneLength = preambleCharacters(template, one, prompt(template, one));
        const twoLength = preambleCharacters(template, two, prompt(template, two));
        assert.ok(oneLength !== undefined && twoLength !== undefined && twoLength > oneLength, `${oneLength} < ${twoLength}`);
        assert.equal(twoLength, preambleCharacters(source(), two, prompt(template, two)));

        const branching = source("{% if shout %}LOUD {% endif %}{% for message in messages %}<{{ message.role }}>{{ message.content }}</{{ message.role }}>{% endfor %}");
        const quiet = session("Go.", []);
        const loud: ChatPromptRequest = { ...quiet, templateKwargs: { shout: true } };
        assert.equal(preambleCharacters(branching, quiet, prompt(branching, quiet)), "<system>You are the coder agent. Follow the house style.</system><user>".length);
        assert.equal(preambleCharacters(branching, loud, prompt(branching, loud)), "LOUD <system>You are the coder agent. Follow the house style.</system><user>".length);
    });

    it("never reaches past the prompt's own text, so a render kept from another prompt cannot mislead it", () => {
        const template = source();
        const request = session("Go.");
        const text = prompt(template, request);
        const full = preambleCharacters(template, request, text)!;
        const altered = `${text.slice(0, 20)}#${text.slice(21)}`;
        assert.equal(preambleCharacters(template, request, altered), 20);
        assert.equal(preambleCharacters(template, request, text), full);
    });

    it("is undefined when the template raises on the preamble, every time", () => {
        const raising = source("{% if messages[-1].role == 'user' %}{{ raise_exception('no users here') }}{% endif %}{{ messages[0].content }}");
        const request = session("Go.", []);
        for (let attempt = 0; attempt < 2; attempt += 1) assert.equal(preambleCharacters(raising, request, "You are the coder agent."), undefined);
    });
});

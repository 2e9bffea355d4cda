import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildChatPrompt, type ChatPromptRequest } from "../../src/chatFormat/chatPrompt.js";
import { hermesFormat } from "../../src/chatFormat/formats/hermes.js";
import { mapleChatTemplate } from "../../src/models/synthetic/mapleChatTemplate.js";
import { reasoningSwitch } from "../../src/wire/reasoning.js";

describe("reasoningSwitch: every API's reasoning field, one decision", () => {
    it("absent is the template's default", () => {
        assert.equal(reasoningSwitch(undefined), undefined);
        assert.equal(reasoningSwitch(null), undefined);
    });

    it("false, none and minimal are off (chat's reasoning_effort, Responses' reasoning.effort, Ollama's think: false, Anthropic's disabled)", () => {
        for (const off of [false, "none", "minimal"] as const) assert.deepEqual(reasoningSwitch(off), { enabled: false }, String(off));
    });

    it("true is on at the template's level; low, medium and high are on at theirs; xhigh and max are high", () => {
        assert.deepEqual(reasoningSwitch(true), { enabled: true, effort: undefined });
        for (const effort of ["low", "medium", "high"] as const) assert.deepEqual(reasoningSwitch(effort), { enabled: true, effort });
        assert.deepEqual(reasoningSwitch("xhigh"), { enabled: true, effort: "high" });
        assert.deepEqual(reasoningSwitch("max"), { enabled: true, effort: "high" });
    });
});

describe("the reasoning switch reaches the template through the model's chat format", () => {
    const source = { template: mapleChatTemplate, bosToken: "", eosToken: "<|im_end|>", format: hermesFormat };
    const request = (fields: Partial<ChatPromptRequest>): ChatPromptRequest => ({
        messages: [{ role: "user", content: "Hi" }], tools: [], templateKwargs: {}, reasoning: undefined, ...fields
    });

    it("Hermes/Qwen3: off closes the think block in the prompt, on (any effort) leaves it open", () => {
        assert.equal(buildChatPrompt(source, request({ reasoning: { enabled: false } })).startsInReasoning, false);
        assert.equal(buildChatPrompt(source, request({ reasoning: { enabled: true, effort: "low" } })).startsInReasoning, true);
        assert.equal(buildChatPrompt(source, request({})).startsInReasoning, true);
        assert.deepEqual(hermesFormat.reasoningVariables({ enabled: true, effort: "high" }), { enable_thinking: true });
    });

    it("chat_template_kwargs win over the switch", () => {
        const prompt = buildChatPrompt(source, request({ reasoning: { enabled: false }, templateKwargs: { enable_thinking: true } }));
        assert.equal(prompt.startsInReasoning, true);
    });
});

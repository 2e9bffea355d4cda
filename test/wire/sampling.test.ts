import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { refuseGrammarWithAnswer } from "../../src/wire/answerConflict.js";
import { InvalidRequestError } from "../../src/errors.js";
import { resolveMaxTokens, samplingWire, toSamplingOptions } from "../../src/wire/sampling.js";

const defaults = { temperature: 0.6, maxNewTokens: 256, maxNewTokensLimit: 1024 };

describe("samplingWire and toSamplingOptions", () => {
    it("applies Maple's defaults to no fields", () => {
        assert.deepEqual(toSamplingOptions(samplingWire.parse({}), defaults), {
            temperature: 0.6, topP: 0.95, topK: 20, minP: undefined, seed: undefined, repetitionPenalty: undefined,
            presencePenalty: undefined, frequencyPenalty: undefined, ignoreEos: undefined, logitBias: undefined
        });
    });

    it("converts every field: top_k -1 is none, the seed wraps to 32 bits, -100 bans a token", () => {
        const wire = samplingWire.parse({
            temperature: 0, top_p: 0.5, top_k: -1, min_p: 0.1, repetition_penalty: 1.1, presence_penalty: 0.5, frequency_penalty: -0.5,
            seed: 2 ** 32 + 7, ignore_eos: true, logit_bias: { 5: -100, 6: 2.5 }
        });
        const options = toSamplingOptions(wire, defaults);
        assert.deepEqual({ ...options, logitBias: [...options.logitBias!] }, {
            temperature: 0, topP: 0.5, topK: 0, minP: 0.1, seed: 7, repetitionPenalty: 1.1, presencePenalty: 0.5, frequencyPenalty: -0.5,
            ignoreEos: true, logitBias: [[5, Number.NEGATIVE_INFINITY], [6, 2.5]]
        });
    });

    it("refuses out-of-range values and a grammar no generation can get through", () => {
        for (const body of [{ temperature: 3 }, { top_p: -0.1 }, { top_k: 2 ** 31 }, { logit_bias: { a: 1 } }, { logit_bias: { 1: 101 } }, { grammar: "root ::= [z-a]" }]) {
            assert.equal(samplingWire.safeParse(body).success, false, JSON.stringify(body));
        }
    });

    it("caps max tokens at the limit and defaults them", () => {
        assert.equal(resolveMaxTokens(undefined, defaults), 256);
        assert.equal(resolveMaxTokens(5000, defaults), 1024);
        assert.equal(resolveMaxTokens(3, defaults), 3);
    });
});

describe("refuseGrammarWithAnswer", () => {
    it("refuses a grammar beside an answer constraint, naming grammar and the wire's fields", () => {
        refuseGrammarWithAnswer(undefined, "root ::= \"a\"", "x");
        refuseGrammarWithAnswer({ json: { schema: undefined } }, undefined, "x");
        assert.throws(() => refuseGrammarWithAnswer({ json: { schema: undefined } }, "root ::= \"a\"", "text.format or an enforced tool_choice"),
            (error: unknown) => error instanceof InvalidRequestError && error.param === "grammar"
                && error.message === "grammar cannot be combined with text.format or an enforced tool_choice: both constrain the output.");
    });
});

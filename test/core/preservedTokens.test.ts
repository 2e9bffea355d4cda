import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { preservedTokens } from "../../src/core/preservedTokens.js";
import { loadTestModel, type TestModel } from "../helpers/testModel.js";

/** On maple-tiny's real Qwen3 vocabulary: which chat-format markers are special tokens the detokenizer would drop. */
describe("preservedTokens", () => {
    let model: TestModel;
    before(async () => {
        model = await loadTestModel({ slots: 1 });
    });
    after(async () => model.dispose());

    it("keeps a control token's text, and only for markers that are one such token", () => {
        const { engine } = model;
        const [imStart] = engine.tokenize("<|im_start|>", { specialTokens: true });
        // What generation writes without preservation: nothing for the control token.
        assert.equal(engine.detokenize([imStart!]), "");
        const preserved = preservedTokens(engine, ["<|im_start|>", "<think>", "<|channel|>"])!;
        assert.deepEqual([...preserved.tokens], [imStart]);
        assert.equal(preserved.text(imStart!), "<|im_start|>");
    });

    it("needs nothing for markers that are text in this vocabulary (Qwen3's <think> and <tool_call>, another family's markers)", () => {
        assert.equal(preservedTokens(model.engine, ["<think>", "</think>", "<tool_call>", "</tool_call>", "[TOOL_CALLS]"]), undefined);
    });
});

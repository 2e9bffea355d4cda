import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { joinTextParts, partText, type TextPartRules } from "../../src/wire/textParts.js";
import { refusal } from "./refusal.js";

const rules: TextPartRules = { textTypes: new Set(["text", "input_text"]), noun: "Content parts" };
const read = (part: unknown, param: string): string => partText(part, param, rules);

describe("text parts", () => {
    it("joins the text of every text type with the wire's separator", () => {
        const parts = [{ type: "text", text: "a" }, { type: "input_text", text: "b" }];
        assert.equal(joinTextParts(parts, "content", "", read), "ab");
        assert.equal(joinTextParts(parts, "content", "\n", read), "a\nb");
        assert.equal(joinTextParts([], "content", "", read), "");
    });

    it("refuses another part by type and a text part without text, at the part's param", () => {
        assert.deepEqual(refusal(() => joinTextParts([{ type: "text", text: "a" }, { type: "image_url" }], "messages[0].content", "", read)),
            { message: "Content parts of type 'image_url' are not supported: this model reads text only.", param: "messages[0].content[1].type" });
        assert.deepEqual(refusal(() => joinTextParts([{ type: "text", text: 3 }], "system", "\n", read)),
            { message: "A text part needs a string 'text'.", param: "system[0].text" });
        assert.equal(refusal(() => read(null, "input[0].content[2]")).param, "input[0].content[2].type");
    });
});

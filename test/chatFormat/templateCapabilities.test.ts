import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { templateCapabilities } from "../../src/chatFormat/templateCapabilities.js";
import { qwen3ChatTemplate } from "../../src/models/synthetic/mapleChatTemplate.js";
import { realTemplate } from "../helpers/chatTemplates.js";

describe("template capabilities (minja's probes)", () => {
    it("Gemma 3 shows no tools but a system message (folded into the first user turn)", () => {
        assert.deepEqual(templateCapabilities(realTemplate("google-gemma-3-4b-it.jinja")), { rendersTools: false, rendersSystem: true });
    });

    it("Gemma 2 shows neither (it raises on a system message)", () => {
        assert.deepEqual(templateCapabilities(realTemplate("google-gemma-2-2b-it.jinja")), { rendersTools: false, rendersSystem: false });
    });

    it("Qwen3 shows both; functionary v3.1 (no rule matches it) shows the tools", () => {
        assert.deepEqual(templateCapabilities(qwen3ChatTemplate), { rendersTools: true, rendersSystem: true });
        assert.equal(templateCapabilities(realTemplate("meetkai-functionary-medium-v3.1.jinja")).rendersTools, true);
    });

    it("a template that does not parse shows nothing", () => {
        assert.deepEqual(templateCapabilities("{% if %}"), { rendersTools: false, rendersSystem: false });
    });
});

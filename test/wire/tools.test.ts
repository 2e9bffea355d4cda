import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ToolDefinition } from "../../src/chatFormat/types.js";
import { refuseDuplicateToolNames, selectTools, toolCallArguments, type ToolChoiceParams } from "../../src/wire/tools.js";
import { refusal } from "./refusal.js";

const tool = (name: string): ToolDefinition => ({ name, parameters: { type: "object", properties: {} } });
const offered = [tool("weather"), tool("time")];
const params: ToolChoiceParams = { param: "tool_choice", nameParam: "tool_choice.name", requiredWord: "any" };

describe("selectTools", () => {
    it("defaults to auto with tools and none without; auto without tools is none", () => {
        assert.deepEqual(selectTools(offered, undefined, params), { toolChoice: { type: "auto" }, tools: offered });
        assert.deepEqual(selectTools([], undefined, params), { toolChoice: { type: "none" }, tools: [] });
        assert.deepEqual(selectTools([], { type: "auto" }, params), { toolChoice: { type: "none" }, tools: [] });
    });

    it("shows the template no tool under none, the named one under a named choice, all otherwise", () => {
        assert.deepEqual(selectTools(offered, { type: "none" }, params).tools, []);
        assert.deepEqual(selectTools(offered, { type: "required" }, params), { toolChoice: { type: "required" }, tools: offered });
        assert.deepEqual(selectTools(offered, { type: "function", name: "time" }, params), { toolChoice: { type: "function", name: "time" }, tools: [tool("time")] });
    });

    it("refuses required without tools and a name that is not offered, in the wire's words and params", () => {
        assert.deepEqual(refusal(() => selectTools([], { type: "required" }, params)),
            { message: "tool_choice 'any' needs at least one tool in 'tools'.", param: "tool_choice" });
        assert.deepEqual(refusal(() => selectTools(offered, { type: "function", name: "missing" }, params)),
            { message: "tool_choice names 'missing', which is not one of the offered tools.", param: "tool_choice.name" });
    });

    it("checks a named choice against the nameable tools only", () => {
        const customOnly = { ...params, nameable: { tools: [tool("time")], noun: "custom tools" } };
        assert.equal(selectTools(offered, { type: "function", name: "time" }, customOnly).toolChoice.type, "function");
        assert.match(refusal(() => selectTools(offered, { type: "function", name: "weather" }, customOnly)).message, /offered custom tools/);
    });
});

describe("refuseDuplicateToolNames", () => {
    it("names the second tool of a name", () => {
        refuseDuplicateToolNames(["a", "b"], (index) => `tools[${index}].name`);
        assert.deepEqual(refusal(() => refuseDuplicateToolNames(["a", "b", "a"], (index) => `tools[${index}].name`)),
            { message: "Two tools are named 'a'; the model calls tools by name, so names must be unique.", param: "tools[2].name" });
    });
});

describe("toolCallArguments", () => {
    it("keeps a JSON object's text; absent or blank is {}", () => {
        assert.equal(toolCallArguments("{\"city\": \"Oslo\"}", "p"), "{\"city\": \"Oslo\"}");
        assert.equal(toolCallArguments(undefined, "p"), "{}");
        assert.equal(toolCallArguments(null, "p"), "{}");
        assert.equal(toolCallArguments("  ", "p"), "{}");
    });

    it("refuses anything but a JSON object encoded as a string, naming the param", () => {
        for (const value of ["[1]", "3", "null", "\"text\"", "{broken", { city: "Oslo" }, 7]) {
            assert.deepEqual(refusal(() => toolCallArguments(value, "input[1].arguments")),
                { message: "Tool call arguments must be a JSON object encoded as a string.", param: "input[1].arguments" }, JSON.stringify(value));
        }
    });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { toGrammarSchema, toolCallGrammarSchema, UnsupportedSchemaError } from "../../src/grammar/jsonSchemaSubset.js";
import { anyObjectGrammarRules, schemaGrammarRules } from "../../src/grammar/jsonGrammarRules.js";
import { hermesFormat } from "../../src/chatFormat/formats/hermes.js";
import { answerGbnf, answerRules, prefixRuleNames, type JsonRules } from "../../src/grammar/answerGrammar.js";

/** The mapping of client schemas onto node-llama-cpp's converter subset; no engine needed. */

const refused = (schema: unknown, keyword: string, pointer: string): void => {
    assert.throws(() => toGrammarSchema(schema), (error: unknown) => {
        assert.ok(error instanceof UnsupportedSchemaError, String(error));
        assert.equal(error.keyword, keyword);
        assert.equal(error.pointer, pointer);
        assert.ok(error.message.includes(keyword), error.message);
        return true;
    });
};

describe("toGrammarSchema", () => {
    it("drops annotations and keeps the constraints the converter reads", () => {
        assert.deepEqual(toGrammarSchema({
            $schema: "https://json-schema.org/draft/2020-12/schema", title: "T", description: "d", $id: "x", examples: [{}],
            type: "object", additionalProperties: false, required: ["a"],
            properties: { a: { type: "string", minLength: 1, maxLength: 4, default: "x" }, b: { type: "integer", "x-vendor": true } }
        }), { type: "object", properties: { a: { type: "string", minLength: 1, maxLength: 4 }, b: { type: "integer" } } });
    });

    it("maps type lists, anyOf, nullable, definitions and draft-07 tuples", () => {
        assert.deepEqual(toGrammarSchema({ type: ["string", "null"], maxLength: 3 }), { oneOf: [{ type: "string", maxLength: 3 }, { type: "null" }] });
        assert.deepEqual(toGrammarSchema({ type: ["integer", "null"] }), { type: ["integer", "null"] });
        assert.deepEqual(toGrammarSchema({ type: ["number", "integer"] }), { type: "number" });
        assert.deepEqual(toGrammarSchema({ anyOf: [{ type: "boolean" }, { const: 3 }], description: "x" }), { oneOf: [{ type: "boolean" }, { const: 3 }] });
        assert.deepEqual(toGrammarSchema({ type: "string", nullable: true }), { oneOf: [{ type: "string" }, { type: "null" }] });
        assert.deepEqual(toGrammarSchema({ allOf: [{ type: "boolean" }] }), { type: "boolean" });
        assert.deepEqual(
            toGrammarSchema({ type: "object", properties: { n: { $ref: "#/definitions/Node" } }, definitions: { Node: { type: "object", properties: { next: { anyOf: [{ $ref: "#/definitions/Node" }, { type: "null" }] } } } } }),
            { type: "object", properties: { n: { $ref: "#/$defs/Node" } }, $defs: { Node: { type: "object", properties: { next: { oneOf: [{ $ref: "#/$defs/Node" }, { type: "null" }] } } } } }
        );
        assert.deepEqual(toGrammarSchema({ type: "array", items: [{ type: "string" }, { type: "null" }], additionalItems: false }),
            { type: "array", prefixItems: [{ type: "string" }, { type: "null" }], maxItems: 2 });
        assert.deepEqual(toGrammarSchema({ type: "string", enum: ["a", 1, null] }), { enum: ["a"] });
    });

    it("gives a schema without a type the type its keywords imply, and {} any value", () => {
        assert.deepEqual(toGrammarSchema({ properties: { a: { type: "null" } } }), { type: "object", properties: { a: { type: "null" } } });
        assert.deepEqual(toGrammarSchema({ maxItems: 2 }), { type: "array", maxItems: 2 });
        const any = toGrammarSchema({});
        assert.deepEqual(toGrammarSchema(true), any);
        assert.ok(Array.isArray(any["oneOf"]));
    });

    it("refuses what the grammar cannot enforce, naming the keyword and where it is", () => {
        refused({ type: "object", properties: { s: { type: "string", pattern: "^a" } } }, "pattern", "/properties/s");
        refused({ type: "integer", minimum: 0 }, "minimum", "");
        refused({ type: "array", items: { type: "string" }, uniqueItems: true }, "uniqueItems", "");
        refused({ type: "string", format: "email" }, "format", "");
        refused({ not: { type: "null" } }, "not", "");
        refused({ type: "object", properties: {}, required: ["missing"] }, "required", "");
        refused({ type: "object", properties: { a: { type: "null" }, b: { type: "null" } }, maxProperties: 1 }, "maxProperties", "");
        refused({ $ref: "#" }, "$ref", "");
        refused({ type: "object", properties: { a: { $ref: "#/$defs/nowhere" } } }, "$ref", "/properties/a");
        refused({ $ref: "#/$defs/A", type: "object", $defs: { A: { type: "null" } } }, "type", "");
        refused({ type: "object", anyOf: [{ type: "object" }] }, "type", "");
        refused({ allOf: [{ type: "null" }, { type: "null" }] }, "allOf", "");
        refused({ $defs: { "a/b": { type: "null", exclusiveMaximum: 3 } } }, "exclusiveMaximum", "/$defs/a~1b");
        refused(false, "false", "");
    });

    it("builds one tool call's schema over the offered tools", () => {
        const parameters = toGrammarSchema({ type: "object", properties: { city: { type: "string" } } });
        assert.deepEqual(toolCallGrammarSchema([{ name: "f", parameters }]),
            { type: "object", properties: { name: { const: "f" }, arguments: parameters } });
        assert.equal((toolCallGrammarSchema([{ name: "f", parameters }, { name: "g", parameters }])["oneOf"] as unknown[]).length, 2);
    });
});

describe("JSON grammar rules", () => {
    it("turn node-llama-cpp's root rule into maple-json and bound its numbers", () => {
        const rules = schemaGrammarRules([
            'root ::= "{" fractional-number-rule "}" "\\n\\n\\n\\n" [\\n]*',
            'fractional-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? ("0" | [1-9] [0-9]{0,15}))?',
            'integer-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15}) ([eE] [-+]? ("0" | [1-9] [0-9]{0,15}))?'
        ].join("\n"));
        assert.match(rules, /^maple-json ::= "\{" fractional-number-rule "\}"$/m);
        assert.match(rules, /\[eE\] \[-\+\]\? \[0-9\]\{1,2\}/);
        assert.match(rules, /^integer-number-rule ::= "-"\? \("0" \| \[1-9\] \[0-9\]\{0,15\}\)$/m);
        assert.throws(() => schemaGrammarRules("root ::= \"x\""));
        // Length-bounded strings keep to the BMP, so JavaScript's length (zod's) agrees with JSON Schema's.
        const bounded = schemaGrammarRules('root ::= string-0-3-rule "\\n\\n\\n\\n" [\\n]*\nstring-0-3-rule ::= "\\"" ( string-char-rule ){0,3} "\\""');
        assert.match(bounded, /^string-0-3-rule ::= "\\"" \( string-bmp-char-rule \)\{0,3\} "\\""$/m);
        assert.match(bounded, /^string-bmp-char-rule ::= .*\\U00010000-\\U0010FFFF/m);
        assert.match(anyObjectGrammarRules("root   ::= object\nobject ::= \"{}\""), /^maple-json ::= object$/m);
    });

    it("prefix rule names outside literals, classes and comments", () => {
        const gbnf = 'a ::= b "a b" [a-b] # a b\nb ::= "x" a';
        assert.equal(prefixRuleNames(gbnf, "p-"), 'p-a ::= p-b "a b" [a-b] # a b\np-b ::= "x" p-a');
    });

    it("compose the answer around tool calls and JSON, and allow a think block only where the model opens one", async () => {
        const rules: JsonRules = async (_schema, prefix) => `${prefix}maple-json ::= "{}"`;
        const both = await answerRules({ json: { schema: undefined }, toolCalls: { tools: [{ name: "f", parameters: {} as never }], parallel: false } },
            hermesFormat.grammar, rules);
        const afterReasoning = answerGbnf(both, hermesFormat.grammar.afterReasoning, undefined);
        assert.match(afterReasoning, /^maple-body ::= \( maple-json \) \| \( maple-calls \)$/m);
        assert.match(afterReasoning, /^maple-calls ::= maple-call$/m);
        assert.match(afterReasoning, /^maple-call ::= "<tool_call>\\n" call-maple-json "\\n<\/tool_call>"$/m);
        assert.match(afterReasoning, /^call-maple-json ::= "\{\}"$/m);
        assert.match(afterReasoning, /^maple-lead ::= \[ \\t\\n\]\{0,4\}$/m);
        const json = await answerRules({ json: { schema: undefined } }, hermesFormat.grammar, rules);
        assert.match(answerGbnf(json, '""', hermesFormat.grammar.reasoningOpen), /"<think>" maple-free/);
        assert.doesNotMatch(answerGbnf(json, '""', undefined), /maple-free/);
        assert.deepEqual(hermesFormat.readPrompt("<|im_start|>assistant\n"), { startsInReasoning: false, mayOpenReasoning: true });
        assert.deepEqual(hermesFormat.readPrompt("<|im_start|>assistant\n<think>\n\n</think>\n\n"), { startsInReasoning: false, mayOpenReasoning: false });
        assert.deepEqual(hermesFormat.readPrompt("<|im_start|>assistant\n<think>\n"), { startsInReasoning: true, mayOpenReasoning: false });
    });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { argumentValue, parameterTypes, textWithout, xmlArgumentRules } from "../../../src/chatFormat/formats/xmlArguments.js";
import type { JsonRules } from "../../../src/grammar/answerGrammar.js";
import type { GrammarJsonSchema } from "../../../src/grammar/jsonSchemaSubset.js";

/**
 * The GBNF that `textWithout` writes, as a JavaScript regular expression: its rules use only
 * literals, character classes, `*`, `|`, groups and one rule reference, which translate one for
 * one, so the grammar can be checked against every string of a small alphabet.
 */
function gbnfToRegExp(rules: readonly string[], start: string): RegExp {
    const bodies = new Map(rules.map((line) => {
        const [name, body] = line.split(" ::= ") as [string, string];
        return [name, body];
    }));
    const translate = (body: string): string => body.replace(/"((?:[^"\\]|\\.)*)"|\[((?:[^\]\\]|\\.)*)\]|([a-z0-9-]+)/g, (_match, literal?: string, cls?: string, rule?: string) => {
        if (literal !== undefined) return (JSON.parse(`"${literal}"`) as string).replace(/[.*+?^${}()|[\]\\/]/g, "\\$&").replace(/\n/g, "\\n");
        if (cls !== undefined) return `[${cls}]`;
        return `(?:${translate(bodies.get(rule!)!)})`;
    }).replace(/\s+/g, "");
    return new RegExp(`^(?:${translate(bodies.get(start)!)})$`, "s");
}

function* strings(alphabet: readonly string[], maxLength: number): Generator<string> {
    yield "";
    let level = [""];
    for (let length = 1; length <= maxLength; length++) {
        const next: string[] = [];
        for (const prefix of level) for (const character of alphabet) next.push(prefix + character);
        yield* next;
        level = next;
    }
}

describe("XML tool-call arguments", () => {
    it("textWithout: exactly the texts that do not contain the closing text", () => {
        for (const close of ["\n</p>", "</a>"]) {
            const pattern = gbnfToRegExp(textWithout(close, "text"), "text");
            let checked = 0;
            for (const text of strings(["\n", "<", "/", "p", "a", ">", "x"], 7)) {
                assert.equal(pattern.test(text), !text.includes(close), `${JSON.stringify(close)} on ${JSON.stringify(text)}`);
                checked += 1;
            }
            assert.ok(checked > 900_000);
        }
    });

    it("reads a parameter's type from type, enum, const, oneOf and $ref", () => {
        assert.deepEqual(parameterTypes({ type: "string" }), new Set(["string"]));
        assert.deepEqual(parameterTypes({ type: ["integer", "null"] }), new Set(["integer", "null"]));
        assert.deepEqual(parameterTypes({ enum: ["a", 1] }), new Set(["string", "integer"]));
        assert.deepEqual(parameterTypes({ oneOf: [{ type: "string" }, { const: true }] }), new Set(["string", "boolean"]));
        assert.deepEqual(parameterTypes({ $ref: "#/$defs/N" }, { $defs: { N: { type: "number" } } }), new Set(["number"]));
        assert.equal(parameterTypes({ description: "anything" }), undefined);
    });

    it("reads a value by its parameter's schema: strings as they are, others as JSON, either by what parses", () => {
        assert.equal(argumentValue("42", { type: "string" }, {}), "42");
        assert.equal(argumentValue("42", { type: "integer" }, {}), 42);
        assert.equal(argumentValue("4.5", { type: "number" }, {}), 4.5);
        assert.equal(argumentValue("3", { type: "number" }, {}), 3);
        assert.equal(argumentValue("true", { type: "boolean" }, {}), true);
        assert.deepEqual(argumentValue('{"a": [1]}', { type: "object" }, {}), { a: [1] });
        assert.equal(argumentValue("null", { type: ["string", "null"] }, {}), null);
        assert.equal(argumentValue("Lagos", { type: ["string", "null"] }, {}), "Lagos");
        // Not what the schema allows: the text, for the client to see.
        assert.equal(argumentValue("many", { type: "integer" }, {}), "many");
        // No type: JSON when it parses to something else than a string.
        assert.equal(argumentValue("7", {}, {}), 7);
        assert.equal(argumentValue("seven", {}, {}), "seven");
        assert.equal(argumentValue('"quoted"', {}, {}), '"quoted"');
    });

    it("writes every property in order: strings as text, enums as literals, bounded strings on one line, the rest as JSON", async () => {
        const rules: JsonRules = async (schema, prefix) => `${prefix}maple-json ::= ${JSON.stringify(JSON.stringify(schema))}`;
        const schema = {
            type: "object",
            properties: { path: { type: "string" }, mode: { enum: ["r", "w"] }, name: { type: "string", maxLength: 8 }, count: { type: "integer" }, tag: { $ref: "#/$defs/T" } },
            $defs: { T: { type: "boolean" } }
        } as unknown as GrammarJsonSchema;
        const lines = await xmlArgumentRules("args", schema, { open: (name) => `<parameter=${name}>\n`, close: "\n</parameter>", separator: "\n" }, rules);
        assert.equal(lines[0], 'args ::= "<parameter=path>\\n" args-value0 "\\n</parameter>\\n" "<parameter=mode>\\n" args-value1 "\\n</parameter>\\n" '
        + '"<parameter=name>\\n" args-value2 "\\n</parameter>\\n" "<parameter=count>\\n" args-value3 "\\n</parameter>\\n" "<parameter=tag>\\n" args-value4 "\\n</parameter>\\n"');
        assert.ok(lines.includes("args-value0 ::= args-value0-text"));
        assert.ok(lines.includes('args-value1 ::= "r" | "w"'));
        assert.ok(lines.includes("args-value2 ::= [^\\n\\n]{0,8}"));
        assert.ok(lines.includes("args-value3 ::= args-value3-maple-json"));
        // A $ref'd property keeps the definitions it needs.
        assert.ok(lines.some((line) => line.startsWith("args-value4-maple-json ::= ") && line.includes("$defs")));
    });
});

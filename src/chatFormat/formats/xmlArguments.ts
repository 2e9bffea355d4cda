import { gbnfLiteral, type JsonRules, type ToolCallsConstraint } from "../../grammar/answerGrammar.js";
import type { GrammarJsonSchema } from "../../grammar/jsonSchemaSubset.js";
import type { ParsedToolCall } from "../toolCallBody.js";
import type { ToolDefinition } from "../types.js";

/**
 * Tool calls whose arguments are written one by one as text, not as a JSON object (Qwen3-Coder's
 * `<parameter=city>\nLagos\n</parameter>`, GLM-4.5's `<arg_key>city</arg_key><arg_value>Lagos</arg_value>`):
 * reading a value back into JSON by its parameter's schema, and the grammar of such arguments.
 *
 * Values follow llama.cpp's reading (`common/parsers/qwen3-coder.cpp`, the XML tool-call parsers
 * of `common/chat-parser.cpp`) and vLLM's qwen3coder tool parser: a parameter that can only be a
 * string is the text as it is; one that cannot be a string is JSON; one that may be either is
 * JSON when the text is a JSON value of an allowed type, else the text.
 */

type Schema = Record<string, unknown>;
type JsonType = "string" | "number" | "integer" | "boolean" | "null" | "object" | "array";

/** The JSON types a parameter's schema allows; undefined when the schema does not say (no type, enum or const). */
export function parameterTypes(schema: unknown, root: unknown = schema, depth = 0): Set<JsonType> | undefined {
    if (!isObject(schema) || depth > 16) return undefined;
    const ref = schema["$ref"];
    if (typeof ref === "string") return parameterTypes(resolveRef(ref, root), root, depth + 1);
    const type = schema["type"];
    if (typeof type === "string") return new Set([type as JsonType]);
    if (Array.isArray(type)) return new Set(type as JsonType[]);
    if ("const" in schema) return new Set([typeOf(schema["const"])]);
    if (Array.isArray(schema["enum"])) return new Set((schema["enum"] as unknown[]).map(typeOf));
    const alternatives = schema["oneOf"] ?? schema["anyOf"];
    if (!Array.isArray(alternatives)) return undefined;
    const types = new Set<JsonType>();
    for (const alternative of alternatives) {
        const some = parameterTypes(alternative, root, depth + 1);
        if (some === undefined) return undefined;
        for (const item of some) types.add(item);
    }
    return types;
}

/** A value's text as JSON, by its parameter's schema (see the module's comment). */
export function argumentValue(text: string, schema: unknown, root: unknown): unknown {
    const types = parameterTypes(schema, root);
    if (types !== undefined && types.size === 1 && types.has("string")) return text;
    const parsed = parseJson(text);
    if (parsed === undefined) return text;
    const type = typeOf(parsed.value);
    // A number is an integer too; a parameter of no known type takes any JSON value but a string's quotes.
    const allowed = types === undefined ? type !== "string" : types.has(type) || (type === "integer" && types.has("number"));
    return allowed ? parsed.value : text;
}

/** The calls' arguments as the wire carries them: a JSON object of the values read by `argumentValue`. */
export function argumentsObject(name: string, values: readonly [string, string][], tools: readonly ToolDefinition[]): ParsedToolCall {
    const parameters = tools.find((tool) => tool.name === name)?.parameters;
    const properties = isObject(parameters?.["properties"]) ? parameters["properties"] : {};
    const args: Record<string, unknown> = {};
    for (const [key, text] of values) args[key] = argumentValue(text, properties[key], parameters);
    return { name, arguments: JSON.stringify(args) };
}

/** How a family writes one argument: what comes before its value, and the text that ends the value. */
export interface XmlArgumentSyntax {
    /** The text before a value: `<parameter=NAME>\n`. */
    open(name: string): string;
    /** The text that ends a value; a value can never contain it. Its first character must not occur again in it. */
    close: string;
    /** What follows `close` before the next argument (a newline, or nothing). */
    separator: string;
}

/**
 * GBNF rules for one tool's arguments in an XML syntax, the rule `NAME` being all of them: every
 * property of the schema, in its order (the JSON grammar writes every property too, which meets
 * any `required`). A property that can only be a string is text (its `enum` or `const` as
 * literals, its `minLength` / `maxLength` on one line), one that cannot be a string is the JSON of
 * its schema, and one that may be either is text, as llama.cpp's grammar makes it.
 */
export async function xmlArgumentRules(name: string, parameters: GrammarJsonSchema, syntax: XmlArgumentSyntax, rules: JsonRules): Promise<string[]> {
    const properties = isObject(parameters["properties"]) ? parameters["properties"] : {};
    const lines: string[] = [];
    const items: string[] = [];
    const defs = parameters["$defs"] === undefined ? {} : { $defs: parameters["$defs"] };
    const entries = Object.entries(properties);
    for (const [index, [key, schema]] of entries.entries()) {
        const valueRule = `${name}-value${index}`;
        const types = parameterTypes(schema, parameters);
        if (types !== undefined && !types.has("string")) {
            const prefix = `${valueRule}-`;
            lines.push(await rules({ ...(schema as Schema), ...defs } as unknown as GrammarJsonSchema, prefix), `${valueRule} ::= ${prefix}maple-json`);
        } else {
            lines.push(`${valueRule} ::= ${stringValue(schema, types, syntax.close, `${valueRule}-text`, lines)}`);
        }
        items.push(`${gbnfLiteral(syntax.open(key))} ${valueRule} ${gbnfLiteral(syntax.close + syntax.separator)}`);
    }
    lines.unshift(`${name} ::= ${items.length === 0 ? '""' : items.join(" ")}`);
    return lines;
}

/**
 * GBNF rules defining `maple-calls`: one call (several, newline-separated, when `parallel`) to any
 * of `tools`, each `around(name)`'s two texts around its arguments in `syntax`.
 */
export async function xmlCallRules(constraint: ToolCallsConstraint, rules: JsonRules, syntax: XmlArgumentSyntax,
    around: (name: string) => [before: string, after: string]): Promise<string[]> {
    const lines = [
        `maple-calls ::= ${constraint.parallel ? 'maple-call ( "\\n" maple-call )*' : "maple-call"}`,
        `maple-call ::= ${constraint.tools.map((_tool, index) => `maple-call-${index}`).join(" | ")}`
    ];
    for (const [index, tool] of constraint.tools.entries()) {
        const [before, after] = around(tool.name);
        lines.push(`maple-call-${index} ::= ${gbnfLiteral(before)} tool${index}-args ${gbnfLiteral(after)}`);
        lines.push(...await xmlArgumentRules(`tool${index}-args`, tool.parameters, syntax, rules));
    }
    return lines;
}

/** The GBNF of a string value: its literals, a bounded line, or any text without `close` (whose rule is added to `lines` as `textRule`). */
function stringValue(schema: unknown, types: Set<JsonType> | undefined, close: string, textRule: string, lines: string[]): string {
    const only = types !== undefined && types.size === 1;
    if (only && isObject(schema)) {
        if (typeof schema["const"] === "string") return gbnfLiteral(schema["const"]);
        if (Array.isArray(schema["enum"])) return (schema["enum"] as string[]).map(gbnfLiteral).join(" | ");
        const min = schema["minLength"];
        const max = schema["maxLength"];
        if (typeof min === "number" || typeof max === "number") {
            return `[^${classChar(close[0]!)}\\n]{${typeof min === "number" ? min : 0},${typeof max === "number" ? max : ""}}`;
        }
    }
    lines.push(...textWithout(close, textRule));
    return textRule;
}

/**
 * GBNF rules defining `rule`: any text that does not contain `close` (whose first character must
 * not occur again in it). The text is split at each occurrence of that first character; what
 * follows one may be any proper prefix of the rest of `close`, alone or followed by a character
 * that breaks the match.
 */
export function textWithout(close: string, rule: string): string[] {
    const first = classChar(close[0]!);
    const rest = close.slice(1);
    const tails: string[] = [];
    for (let size = 0; size < rest.length; size++) {
        const prefix = size === 0 ? "" : `${gbnfLiteral(rest.slice(0, size))} `;
        tails.push(`${prefix}[^${first}${classChar(rest[size]!)}] [^${first}]*`);
        tails.push(size === 0 ? '""' : gbnfLiteral(rest.slice(0, size)));
    }
    return [`${rule} ::= [^${first}]* ( ${gbnfLiteral(close[0]!)} ${rule}-tail )*`, `${rule}-tail ::= ${tails.join(" | ")}`];
}

/** A character as it goes into a GBNF character class. */
function classChar(character: string): string {
    if (character === "\n") return "\\n";
    if (character === "\t") return "\\t";
    if (character === "\r") return "\\r";
    return /[\]\\^-]/.test(character) ? `\\${character}` : character;
}

function resolveRef(ref: string, root: unknown): unknown {
    const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
    if (match === null || !isObject(root)) return undefined;
    const defs = root[match[1]!];
    return isObject(defs) ? defs[match[2]!.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined;
}

function typeOf(value: unknown): JsonType {
    if (value === null) return "null";
    if (Array.isArray(value)) return "array";
    if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
    return typeof value as "string" | "boolean" | "object";
}

function parseJson(text: string): { value: unknown } | undefined {
    try {
        return { value: JSON.parse(text) as unknown };
    } catch {
        return undefined;
    }
}

function isObject(value: unknown): value is Schema {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}

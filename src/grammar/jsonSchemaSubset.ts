/**
 * The JSON Schema subset that node-llama-cpp's JSON-schema-to-GBNF converter (3.22.1,
 * `utils/gbnfJson`) turns into a grammar, and the mapping of a client's schema onto it.
 *
 * The converter reads a handful of keywords and silently ignores the rest, so a schema it does not
 * understand would constrain generation less than the client asked (or, for a schema without
 * `type`, produce only `null`). `toGrammarSchema` therefore walks the whole schema first: every
 * assertion keyword is either mapped onto the converter's subset or refused by name
 * (`UnsupportedSchemaError`); annotations are dropped. A value the grammar produces always
 * validates against the client's schema.
 *
 * Supported: `type` (one or a list), `enum` and `const` (scalar values), `properties`,
 * `required` (the grammar writes every property, so any `required` list is met),
 * `additionalProperties` (absent is treated as `false`, which only narrows), `minProperties` /
 * `maxProperties`, `items` (schema, or draft-07 tuple list with `additionalItems`), `prefixItems`,
 * `minItems` / `maxItems`, `minLength` / `maxLength`, `format` `date` / `time` / `date-time`,
 * `anyOf` / `oneOf` (generated as a choice of one alternative), a one-element `allOf`, `$ref` to
 * `#/$defs/NAME` or `#/definitions/NAME`, and OpenAPI's `nullable`. Refused: `pattern`,
 * `patternProperties`, `minimum` / `maximum` / `exclusive*` / `multipleOf`, `not`,
 * `if`/`then`/`else`, `uniqueItems: true`, `contains`, `propertyNames`, `dependent*`,
 * `unevaluated*`, other formats, other `$ref` forms.
 */

declare const grammarSchemaBrand: unique symbol;

/** A schema in the converter's own subset, as `toGrammarSchema` returns it (only the engine reads it). */
export type GrammarJsonSchema = Readonly<Record<string, unknown>> & { readonly [grammarSchemaBrand]: true };

/** A schema keyword Maple cannot enforce by grammar; `pointer` is where it is (JSON Pointer, "" for the root). */
export class UnsupportedSchemaError extends Error {
    override name = "UnsupportedSchemaError";

    constructor(readonly keyword: string, readonly pointer: string, detail: string) {
        super(`${detail} (at ${pointer === "" ? "the schema's root" : pointer}).`);
    }
}

const jsonTypes = ["string", "number", "integer", "boolean", "null", "object", "array"] as const;
type JsonType = (typeof jsonTypes)[number];

/** Formats the converter writes a grammar for. */
const supportedFormats: readonly string[] = ["date", "time", "date-time"];

/**
 * Assertion keywords of JSON Schema (draft-04 to 2020-12) that the converter ignores: refused,
 * never dropped. Keywords in neither this list nor the handled ones are annotations (JSON Schema
 * gives an unknown keyword no say over validity) and are dropped.
 */
const refusedKeywords: readonly string[] = [
    "pattern", "patternProperties", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "not", "if", "then", "else", "contains", "minContains", "maxContains", "propertyNames", "dependentRequired",
    "dependentSchemas", "dependencies", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef",
    "contentSchema"
];

/** Deeper nesting than this is refused rather than risk the converter's own limit (512 scopes). */
const maxDepth = 64;

type Schema = Record<string, unknown>;

/**
 * Maps a client's JSON schema onto the converter's subset.
 * @throws UnsupportedSchemaError naming the first keyword that cannot be enforced.
 */
export function toGrammarSchema(schema: unknown): GrammarJsonSchema {
    return new SchemaMapper().map(schema, "", new Set(), 0) as GrammarJsonSchema;
}

/** The converter's schema for any JSON value (`{}` or `true`). */
function anyValue(): Schema {
    return {
        oneOf: [
            { type: "object", additionalProperties: true },
            { type: "array" },
            { type: ["string", "number", "boolean", "null"] }
        ]
    };
}

function isObject(value: unknown): value is Schema {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isScalar(value: unknown): value is string | number | boolean | null {
    return value === null || typeof value === "string" || typeof value === "number" || typeof value === "boolean";
}

function typeOfScalar(value: string | number | boolean | null): JsonType {
    if (value === null) return "null";
    if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
    return typeof value as "string" | "boolean";
}

function escapePointer(key: string): string {
    return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

class SchemaMapper {
    map(schema: unknown, pointer: string, visibleDefs: ReadonlySet<string>, depth: number): Schema {
        if (depth > maxDepth) throw new UnsupportedSchemaError("depth", pointer, `Schemas nested deeper than ${maxDepth} levels are not supported`);
        if (schema === true) return anyValue();
        if (schema === false) throw new UnsupportedSchemaError("false", pointer, "The schema `false` (no valid value) cannot be generated");
        if (!isObject(schema)) throw new UnsupportedSchemaError("schema", pointer, "A schema must be an object or a boolean");
        for (const keyword of refusedKeywords) {
            if (schema[keyword] !== undefined) {
                throw new UnsupportedSchemaError(keyword, pointer, `The JSON schema keyword '${keyword}' is not supported by Maple's grammar-constrained generation`);
            }
        }
        if (schema["uniqueItems"] === true) {
            throw new UnsupportedSchemaError("uniqueItems", pointer, "The JSON schema keyword 'uniqueItems' is not supported by Maple's grammar-constrained generation");
        }
        if (schema["additionalItems"] !== undefined && !Array.isArray(schema["items"])) {
            throw new UnsupportedSchemaError("additionalItems", pointer, "'additionalItems' is only supported beside a list of 'items' (draft-07 tuples)");
        }

        // Definitions are visible to the whole subtree, themselves included (recursion).
        const defs = this.collectDefs(schema, pointer);
        const visible = defs.size === 0 ? visibleDefs : new Set([...visibleDefs, ...defs.keys()]);
        const mappedDefs: Schema = {};
        for (const [name, { value, at }] of defs) mappedDefs[name] = this.map(value, at, visible, depth + 1);
        const withDefs = (mapped: Schema): Schema => (defs.size === 0 ? mapped : { ...mapped, $defs: { ...(mapped["$defs"] as Schema | undefined), ...mappedDefs } });

        return withDefs(this.mapBody(schema, pointer, visible, depth));
    }

    private collectDefs(schema: Schema, pointer: string): Map<string, { value: unknown; at: string }> {
        const defs = new Map<string, { value: unknown; at: string }>();
        for (const keyword of ["definitions", "$defs"]) {
            const value = schema[keyword];
            if (value === undefined) continue;
            if (!isObject(value)) throw new UnsupportedSchemaError(keyword, pointer, `'${keyword}' must be an object of schemas`);
            for (const [name, def] of Object.entries(value)) defs.set(name, { value: def, at: `${pointer}/${keyword}/${escapePointer(name)}` });
        }
        return defs;
    }

    private mapBody(schema: Schema, pointer: string, visible: ReadonlySet<string>, depth: number): Schema {
        const constraints = Object.keys(schema).filter((key) => handledKeywords.has(key) && key !== "$defs" && key !== "definitions");

        if (schema["$ref"] !== undefined) {
            const others = constraints.filter((key) => key !== "$ref");
            if (others.length > 0) {
                throw new UnsupportedSchemaError(others[0]!, pointer, `'${others[0]}' beside '$ref' is not supported; put the constraint in the referenced definition`);
            }
            return { $ref: this.mapRef(schema["$ref"], pointer, visible) };
        }

        if (schema["nullable"] === true) {
            const { nullable: _, ...rest } = schema;
            return { oneOf: [this.mapBody(rest, pointer, visible, depth), { type: "null" }] };
        }

        for (const combinator of ["allOf", "anyOf", "oneOf"] as const) {
            if (schema[combinator] === undefined) continue;
            const others = constraints.filter((key) => key !== combinator && key !== "nullable");
            if (others.length > 0) {
                throw new UnsupportedSchemaError(others[0]!, pointer, `'${others[0]}' beside '${combinator}' is not supported; move it into each alternative`);
            }
            const alternatives = schema[combinator];
            if (!Array.isArray(alternatives) || alternatives.length === 0) {
                throw new UnsupportedSchemaError(combinator, pointer, `'${combinator}' must be a non-empty list of schemas`);
            }
            if (combinator === "allOf") {
                if (alternatives.length > 1) {
                    throw new UnsupportedSchemaError("allOf", pointer, "'allOf' with more than one schema is not supported");
                }
                return this.map(alternatives[0], `${pointer}/allOf/0`, visible, depth + 1);
            }
            // For generation, anyOf and oneOf both mean "write a value of one alternative".
            return { oneOf: alternatives.map((alternative, index) => this.map(alternative, `${pointer}/${combinator}/${index}`, visible, depth + 1)) };
        }

        const types = this.readTypes(schema, pointer);
        if (schema["const"] !== undefined) return { const: this.scalar(schema["const"], "const", pointer) };
        if (schema["enum"] !== undefined) return this.mapEnum(schema, types, pointer);

        const inferred = types ?? inferTypes(schema);
        if (inferred === undefined) return anyValue();
        if (inferred.length === 1) return this.mapTyped(schema, inferred[0]!, pointer, visible, depth);
        // Objects, arrays and strings carry their own keywords; the other types combine into one `type` list.
        const structured = (type: JsonType): boolean => type === "object" || type === "array" || type === "string";
        const scalars = inferred.filter((type) => !structured(type));
        const alternatives = inferred.filter(structured).map((type) => this.mapTyped(schema, type, pointer, visible, depth));
        if (scalars.length > 0) alternatives.push({ type: scalars.length === 1 ? scalars[0] : scalars });
        return alternatives.length === 1 ? alternatives[0]! : { oneOf: alternatives };
    }

    private mapRef(ref: unknown, pointer: string, visible: ReadonlySet<string>): string {
        const match = typeof ref === "string" ? /^#\/(?:\$defs|definitions)\/([^/~]+)$/.exec(ref) : null;
        if (match === null) {
            throw new UnsupportedSchemaError("$ref", pointer, `'$ref' ${JSON.stringify(ref)} is not supported; only '#/$defs/NAME' and '#/definitions/NAME' are`);
        }
        const name = decodeURIComponent(match[1]!);
        if (!visible.has(name)) {
            throw new UnsupportedSchemaError("$ref", pointer, `'$ref' ${JSON.stringify(ref)} names no definition in scope`);
        }
        return `#/$defs/${name}`;
    }

    private readTypes(schema: Schema, pointer: string): JsonType[] | undefined {
        const type = schema["type"];
        if (type === undefined) return undefined;
        const list = Array.isArray(type) ? type : [type];
        if (list.length === 0 || !list.every((item): item is JsonType => jsonTypes.includes(item as JsonType))) {
            throw new UnsupportedSchemaError("type", pointer, `'type' must be one of ${jsonTypes.join(", ")}, or a list of them`);
        }
        const unique = [...new Set(list)];
        // An integer is a number: "integer" adds nothing beside "number".
        return unique.includes("number") ? unique.filter((item) => item !== "integer") : unique;
    }

    private scalar(value: unknown, keyword: string, pointer: string): string | number | boolean | null {
        if (!isScalar(value)) {
            throw new UnsupportedSchemaError(keyword, pointer, `'${keyword}' values that are objects or lists are not supported`);
        }
        return value;
    }

    private mapEnum(schema: Schema, types: JsonType[] | undefined, pointer: string): Schema {
        const values = schema["enum"];
        if (!Array.isArray(values) || values.length === 0) throw new UnsupportedSchemaError("enum", pointer, "'enum' must be a non-empty list");
        const scalars = values.map((value) => this.scalar(value, "enum", pointer));
        // With a `type` too, only the values of that type are valid.
        const allowed = types === undefined ? scalars : scalars.filter((value) => {
            const type = typeOfScalar(value);
            return types.includes(type) || (type === "integer" && types.includes("number"));
        });
        if (allowed.length === 0) throw new UnsupportedSchemaError("enum", pointer, "No 'enum' value matches the schema's 'type'");
        return { enum: allowed };
    }

    private mapTyped(schema: Schema, type: JsonType, pointer: string, visible: ReadonlySet<string>, depth: number): Schema {
        switch (type) {
            case "object":
                return this.mapObject(schema, pointer, visible, depth);
            case "array":
                return this.mapArray(schema, pointer, visible, depth);
            case "string":
                return this.mapString(schema, pointer);
            default:
                return { type };
        }
    }

    private mapObject(schema: Schema, pointer: string, visible: ReadonlySet<string>, depth: number): Schema {
        const mapped: Schema = { type: "object" };
        const properties = schema["properties"];
        const names: string[] = [];
        if (properties !== undefined) {
            if (!isObject(properties)) throw new UnsupportedSchemaError("properties", pointer, "'properties' must be an object of schemas");
            const mappedProperties: Schema = {};
            for (const [name, value] of Object.entries(properties)) {
                mappedProperties[name] = this.map(value, `${pointer}/properties/${escapePointer(name)}`, visible, depth + 1);
                names.push(name);
            }
            mapped["properties"] = mappedProperties;
        }
        const required = schema["required"];
        if (required !== undefined) {
            if (!Array.isArray(required) || !required.every((name) => typeof name === "string")) {
                throw new UnsupportedSchemaError("required", pointer, "'required' must be a list of property names");
            }
            const missing = required.find((name) => !names.includes(name));
            if (missing !== undefined) {
                throw new UnsupportedSchemaError("required", pointer, `'required' names '${missing}', which is not in 'properties' (the grammar writes exactly the listed properties)`);
            }
        }
        const additional = schema["additionalProperties"];
        if (additional !== undefined && additional !== false) {
            mapped["additionalProperties"] = additional === true ? true : this.map(additional, `${pointer}/additionalProperties`, visible, depth + 1);
        }
        const minProperties = this.count(schema, "minProperties", pointer);
        const maxProperties = this.count(schema, "maxProperties", pointer);
        // Every listed property is always written.
        if (maxProperties !== undefined && maxProperties < names.length) {
            throw new UnsupportedSchemaError("maxProperties", pointer, "'maxProperties' below the number of 'properties' is not supported (the grammar writes every property)");
        }
        if (minProperties !== undefined && minProperties > names.length) {
            if (additional === false) throw new UnsupportedSchemaError("minProperties", pointer, "'minProperties' cannot be met with 'additionalProperties: false'");
            mapped["additionalProperties"] ??= true;
            mapped["minProperties"] = minProperties;
        }
        if (maxProperties !== undefined && mapped["additionalProperties"] !== undefined) mapped["maxProperties"] = maxProperties;
        return mapped;
    }

    private mapArray(schema: Schema, pointer: string, visible: ReadonlySet<string>, depth: number): Schema {
        const mapped: Schema = { type: "array" };
        let items = schema["items"];
        let prefixItems = schema["prefixItems"];
        let maxItems = this.count(schema, "maxItems", pointer);
        const minItems = this.count(schema, "minItems", pointer);
        if (Array.isArray(items)) {
            // Draft-07 tuples: `items` is the list, `additionalItems` the rest.
            if (prefixItems !== undefined) throw new UnsupportedSchemaError("items", pointer, "A list of 'items' beside 'prefixItems' is not supported");
            prefixItems = items;
            items = schema["additionalItems"];
        }
        if (prefixItems !== undefined) {
            if (!Array.isArray(prefixItems)) throw new UnsupportedSchemaError("prefixItems", pointer, "'prefixItems' must be a list of schemas");
            mapped["prefixItems"] = prefixItems.map((item, index) => this.map(item, `${pointer}/prefixItems/${index}`, visible, depth + 1));
        }
        const prefixLength = Array.isArray(prefixItems) ? prefixItems.length : 0;
        if (items === false) maxItems = Math.min(maxItems ?? prefixLength, prefixLength);
        else if (items !== undefined && items !== true) mapped["items"] = this.map(items, `${pointer}/items`, visible, depth + 1);
        if (minItems !== undefined) mapped["minItems"] = minItems;
        if (maxItems !== undefined) {
            if (maxItems < prefixLength || (minItems !== undefined && maxItems < minItems)) {
                throw new UnsupportedSchemaError("maxItems", pointer, "'maxItems' is below 'minItems' or the number of 'prefixItems'");
            }
            mapped["maxItems"] = maxItems;
        }
        return mapped;
    }

    private mapString(schema: Schema, pointer: string): Schema {
        const mapped: Schema = { type: "string" };
        const format = schema["format"];
        if (format !== undefined) {
            if (typeof format !== "string" || !supportedFormats.includes(format)) {
                throw new UnsupportedSchemaError("format", pointer, `'format' ${JSON.stringify(format)} is not supported; Maple's grammar writes only ${supportedFormats.join(", ")}`);
            }
            if (schema["minLength"] !== undefined || schema["maxLength"] !== undefined) {
                throw new UnsupportedSchemaError("format", pointer, "'format' beside 'minLength' or 'maxLength' is not supported");
            }
            mapped["format"] = format;
            return mapped;
        }
        const minLength = this.count(schema, "minLength", pointer);
        const maxLength = this.count(schema, "maxLength", pointer);
        if (minLength !== undefined && maxLength !== undefined && maxLength < minLength) {
            throw new UnsupportedSchemaError("maxLength", pointer, "'maxLength' is below 'minLength'");
        }
        if (minLength !== undefined) mapped["minLength"] = minLength;
        if (maxLength !== undefined) mapped["maxLength"] = maxLength;
        return mapped;
    }

    private count(schema: Schema, keyword: string, pointer: string): number | undefined {
        const value = schema[keyword];
        if (value === undefined) return undefined;
        if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
            throw new UnsupportedSchemaError(keyword, pointer, `'${keyword}' must be a non-negative integer`);
        }
        return value;
    }
}

/** Keywords this mapper reads (anything else is an annotation, or refused above). */
const handledKeywords: ReadonlySet<string> = new Set([
    "type", "enum", "const", "$ref", "$defs", "definitions", "allOf", "anyOf", "oneOf", "nullable",
    "properties", "required", "additionalProperties", "minProperties", "maxProperties",
    "items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems",
    "minLength", "maxLength", "format"
]);

/** The types a schema without `type` implies by its keywords (a value of that type satisfies it); undefined: any value. */
function inferTypes(schema: Schema): JsonType[] | undefined {
    const types: JsonType[] = [];
    if (["properties", "required", "additionalProperties", "minProperties", "maxProperties"].some((key) => schema[key] !== undefined)) types.push("object");
    if (["items", "prefixItems", "minItems", "maxItems"].some((key) => schema[key] !== undefined)) types.push("array");
    if (["minLength", "maxLength", "format"].some((key) => schema[key] !== undefined)) types.push("string");
    // One implied type is enough: a value of it satisfies the schema (the others' keywords do not apply to it).
    return types.length === 0 ? undefined : [types[0]!];
}

/**
 * The JSON of one tool call, `{"name": NAME, "arguments": {...}}`, for any of `tools` (whose
 * `parameters` are already mapped by `toGrammarSchema`): the body of a `<tool_call>` block.
 */
export function toolCallGrammarSchema(tools: readonly { name: string; parameters: GrammarJsonSchema }[]): GrammarJsonSchema {
    const calls = tools.map((tool) => ({ type: "object", properties: { name: { const: tool.name }, arguments: tool.parameters } }));
    return (calls.length === 1 ? calls[0] : { oneOf: calls }) as unknown as GrammarJsonSchema;
}

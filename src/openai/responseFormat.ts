import { InvalidRequestError } from "../errors.js";
import { grammarSchema } from "../grammar/clientSchema.js";
import type { GrammarJsonSchema } from "../grammar/jsonSchemaSubset.js";

/** An answer format as it arrives: chat's `response_format`, Responses' `text.format`. */
export interface WireResponseFormat {
    type: string;
    [key: string]: unknown;
}

/** Where a `json_schema` format holds its schema, and that schema's param; undefined: no schema (any JSON object). */
export type SchemaReader = (format: WireResponseFormat) => { schema: unknown; param: string } | undefined;

/**
 * OpenAI's answer formats: `text` (the default) → undefined; `json_object` → any JSON object;
 * `json_schema` → the schema `readSchema` finds. `param` names the field in errors. `strict` is
 * accepted either way: Maple always enforces.
 */
export function jsonAnswerFormat(format: WireResponseFormat | null | undefined, param: string, readSchema: SchemaReader): { schema: GrammarJsonSchema | undefined } | undefined {
    if (format == null || format.type === "text") return undefined;
    if (format.type === "json_object") return { schema: undefined };
    if (format.type !== "json_schema") {
        throw new InvalidRequestError(`${param} type '${format.type}' is not supported; use 'text', 'json_object' or 'json_schema'.`, `${param}.type`);
    }
    const found = readSchema(format);
    return { schema: found === undefined ? undefined : grammarSchema(found.schema, found.param) };
}

/** Chat's `response_format`: a `json_schema` format's `json_schema: {name, schema, strict}`, whose schema may be absent (any JSON object). */
export function parseResponseFormat(format: WireResponseFormat | null | undefined): { schema: GrammarJsonSchema | undefined } | undefined {
    return jsonAnswerFormat(format, "response_format", (jsonSchema) => {
        const spec = jsonSchema["json_schema"];
        if (spec === null || typeof spec !== "object" || Array.isArray(spec)) {
            throw new InvalidRequestError("response_format of type 'json_schema' needs a 'json_schema' object with 'name' and 'schema'.", "response_format.json_schema");
        }
        const { name, schema } = spec as { name?: unknown; schema?: unknown };
        if (name !== undefined && typeof name !== "string") throw new InvalidRequestError("json_schema.name must be a string.", "response_format.json_schema.name");
        return schema === undefined ? undefined : { schema, param: "response_format.json_schema.schema" };
    });
}

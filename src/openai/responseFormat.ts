import { InvalidRequestError } from "../errors.js";
import { grammarSchema } from "../grammar/clientSchema.js";
import type { GrammarJsonSchema } from "../grammar/jsonSchemaSubset.js";

/** `response_format` as it arrives: `{type}` plus, for `json_schema`, `json_schema: {name, schema, strict}`. */
export interface WireResponseFormat {
    type: string;
    [key: string]: unknown;
}

/** The JSON the answer must be, or undefined for `text` (the default). `strict` is accepted either way: Maple always enforces. */
export function parseResponseFormat(format: WireResponseFormat | null | undefined): { schema: GrammarJsonSchema | undefined } | undefined {
    if (format == null || format.type === "text") return undefined;
    if (format.type === "json_object") return { schema: undefined };
    if (format.type !== "json_schema") {
        throw new InvalidRequestError(`response_format type '${format.type}' is not supported; use 'text', 'json_object' or 'json_schema'.`, "response_format.type");
    }
    const spec = format["json_schema"];
    if (spec === null || typeof spec !== "object" || Array.isArray(spec)) {
        throw new InvalidRequestError("response_format of type 'json_schema' needs a 'json_schema' object with 'name' and 'schema'.", "response_format.json_schema");
    }
    const { name, schema } = spec as { name?: unknown; schema?: unknown };
    if (name !== undefined && typeof name !== "string") throw new InvalidRequestError("json_schema.name must be a string.", "response_format.json_schema.name");
    // No schema: any JSON object, as json_object.
    return { schema: schema === undefined ? undefined : grammarSchema(schema, "response_format.json_schema.schema") };
}

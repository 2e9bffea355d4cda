import type { AnswerConstraint } from "../chat/answerGrammar.js";
import type { ToolDefinition } from "../chat/types.js";
import { toGrammarSchema, toolCallGrammarSchema, UnsupportedSchemaError } from "../engine/grammarJsonSchema.js";
import type { GrammarJsonSchema } from "../engine/types.js";
import { InvalidRequestError } from "../errors.js";
import type { ToolChoice } from "./chatRequest.js";

/** `response_format` as it arrives: `{type}` plus, for `json_schema`, `json_schema: {name, schema, strict}`. */
export interface WireResponseFormat {
    type: string;
    [key: string]: unknown;
}

/** A client's JSON schema in the grammar's subset; an unsupported keyword is a 400 naming `param` and the keyword. */
export function grammarSchema(schema: unknown, param: string): GrammarJsonSchema {
    // A NUL in a const, an enum or a property name broke the grammar's text (500 before), and even
    // escaped it would be a dead end: no token produces U+0000 (see grammarDeadEnd.ts).
    if (hasNul(schema)) throw new InvalidRequestError(`Unsupported schema in '${param}': a string with U+0000 (NUL), which no token can produce.`, param);
    try {
        return toGrammarSchema(schema);
    } catch (error) {
        if (error instanceof UnsupportedSchemaError) throw new InvalidRequestError(`Unsupported schema in '${param}': ${error.message}`, param);
        throw error;
    }
}

/** Any string or key with U+0000; the body's depth is bounded (src/http/jsonBody.ts), so the recursion is too. */
function hasNul(value: unknown): boolean {
    if (typeof value === "string") return value.includes("\u0000");
    if (Array.isArray(value)) return value.some(hasNul);
    if (value !== null && typeof value === "object") return Object.entries(value).some(([key, item]) => key.includes("\u0000") || hasNul(item));
    return false;
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

/**
 * What the grammar enforces on the answer. `tool_choice` `required` (any offered tool) or a named
 * function: tool calls only, whatever `response_format` says (the answer of this turn is the
 * calls). `response_format` beside tools the model may call (`auto`): either the JSON or tool calls.
 * Otherwise the JSON, or nothing. `schemaParam`: where the wire format holds offered tool `index`'s
 * schema, named by the 400 for a schema the grammar cannot enforce.
 */
export function answerConstraint(json: { schema: GrammarJsonSchema | undefined } | undefined, toolChoice: ToolChoice,
    offered: readonly ToolDefinition[], parallelToolCalls: boolean,
    schemaParam = (index: number): string => `tools[${index}].function.parameters`): AnswerConstraint | undefined {
    const enforced = toolChoice.type === "required" || toolChoice.type === "function";
    const callable = enforced || (toolChoice.type === "auto" && json !== undefined)
        ? offered.filter((tool) => toolChoice.type !== "function" || tool.name === toolChoice.name)
        : [];
    const toolCalls = callable.length === 0 ? undefined : {
        callSchema: toolCallGrammarSchema(callable.map((tool) => ({
            name: tool.name,
            parameters: grammarSchema(tool.parameters, schemaParam(offered.indexOf(tool)))
        }))),
        parallel: parallelToolCalls
    };
    if (enforced) return { toolCalls };
    if (json === undefined) return undefined;
    return toolCalls === undefined ? { json } : { json, toolCalls };
}

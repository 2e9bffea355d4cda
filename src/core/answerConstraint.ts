import type { ToolChoice, ToolDefinition } from "../chatFormat/types.js";
import type { AnswerConstraint } from "../grammar/answerGrammar.js";
import { grammarSchema } from "../grammar/clientSchema.js";
import type { GrammarJsonSchema } from "../grammar/jsonSchemaSubset.js";

/**
 * What the grammar enforces on the answer. Tool choice `required` (any offered tool) or a named
 * function: tool calls only, whatever the JSON answer says (the answer of this turn is the
 * calls). A JSON answer beside tools the model may call (`auto`): either the JSON or tool calls.
 * Otherwise the JSON, or nothing.
 *
 * `json`: the answer's schema (from `grammarSchema`), `{schema: undefined}` for any JSON object,
 * undefined for free text. `toolParam(index)`: where tool `index`'s parameters sit in the wire
 * request, for the error that refuses a schema the grammar cannot enforce.
 */
export function answerConstraint(json: { schema: GrammarJsonSchema | undefined } | undefined, toolChoice: ToolChoice,
    offered: readonly ToolDefinition[], parallelToolCalls: boolean, toolParam: (index: number) => string): AnswerConstraint | undefined {
    const enforced = toolChoice.type === "required" || toolChoice.type === "function";
    const callable = enforced || (toolChoice.type === "auto" && json !== undefined)
        ? offered.filter((tool) => toolChoice.type !== "function" || tool.name === toolChoice.name)
        : [];
    const toolCalls = callable.length === 0 ? undefined : {
        tools: callable.map((tool) => ({ name: tool.name, parameters: grammarSchema(tool.parameters, toolParam(offered.indexOf(tool))) })),
        parallel: parallelToolCalls
    };
    if (enforced) return { toolCalls };
    if (json === undefined) return undefined;
    return toolCalls === undefined ? { json } : { json, toolCalls };
}

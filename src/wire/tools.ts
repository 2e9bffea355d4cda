import type { ToolChoice, ToolDefinition } from "../chatFormat/types.js";
import { InvalidRequestError } from "../errors.js";

/** How a wire format names its tool choice in errors. */
export interface ToolChoiceParams {
    /** Where the choice sits: "tool_choice". */
    param: string;
    /** Where a named choice's name sits: "tool_choice" (chat's `function.name`) or "tool_choice.name". */
    nameParam: string;
    /** The wire's word for "call at least one": "required" (OpenAI) or "any" (Anthropic). */
    requiredWord: string;
    /** The tools a named choice may name and what they are called: default all offered, "tools". */
    nameable?: { tools: readonly ToolDefinition[]; noun: string };
}

/** The tool choice in force and the tools the template is shown under it. */
export interface ToolSelection {
    toolChoice: ToolChoice;
    /** none → [], a named tool → that one, otherwise every offered tool. */
    tools: ToolDefinition[];
}

/**
 * Checks the requested choice (already in the core's four terms; undefined: the wire's default)
 * against the offered tools. No choice, or `auto` without tools, is `none`: there is nothing to call.
 */
export function selectTools(offered: readonly ToolDefinition[], requested: ToolChoice | undefined, params: ToolChoiceParams): ToolSelection {
    const toolChoice = resolveToolChoice(offered, requested, params);
    const tools = toolChoice.type === "none" ? [] : toolChoice.type === "function" ? offered.filter((tool) => tool.name === toolChoice.name) : [...offered];
    return { toolChoice, tools };
}

function resolveToolChoice(offered: readonly ToolDefinition[], requested: ToolChoice | undefined, params: ToolChoiceParams): ToolChoice {
    switch (requested?.type) {
        case undefined:
        case "auto":
            return { type: offered.length > 0 ? "auto" : "none" };
        case "none":
            return requested;
        case "required":
            if (offered.length === 0) throw new InvalidRequestError(`tool_choice '${params.requiredWord}' needs at least one tool in 'tools'.`, params.param);
            return requested;
        case "function": {
            const nameable = params.nameable ?? { tools: offered, noun: "tools" };
            if (!nameable.tools.some((tool) => tool.name === requested.name)) {
                throw new InvalidRequestError(`tool_choice names '${requested.name}', which is not one of the offered ${nameable.noun}.`, params.nameParam);
            }
            return requested;
        }
    }
}

/** The model calls tools by name: two with one name would make its calls ambiguous. `param(index)`: where tool `index`'s name sits. */
export function refuseDuplicateToolNames(names: readonly string[], param: (index: number) => string): void {
    const seen = new Set<string>();
    names.forEach((name, index) => {
        if (seen.has(name)) throw new InvalidRequestError(`Two tools are named '${name}'; the model calls tools by name, so names must be unique.`, param(index));
        seen.add(name);
    });
}

/**
 * The arguments of a tool call sent back in an assistant turn, as the template gets them: a JSON
 * object's text. Absent or blank is no arguments (`{}`); anything else is refused, since a
 * template that parses them (most do) would fail on the whole conversation.
 */
export function toolCallArguments(value: unknown, param: string): string {
    if (value == null) return "{}";
    if (typeof value === "string") {
        if (value.trim() === "") return "{}";
        if (isJsonObjectText(value)) return value;
    }
    throw new InvalidRequestError("Tool call arguments must be a JSON object encoded as a string.", param);
}

function isJsonObjectText(text: string): boolean {
    try {
        const value: unknown = JSON.parse(text);
        return value !== null && typeof value === "object" && !Array.isArray(value);
    } catch {
        return false;
    }
}

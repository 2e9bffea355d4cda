import type { OutputParser } from "../../src/chatFormat/formats/chatFormat.js";
import { hermesFormat } from "../../src/chatFormat/formats/hermes.js";
import type { ToolDefinition } from "../../src/chatFormat/types.js";

/** A tool to offer when a test only needs tool calls to be parsed (Hermes' parser reads any name). */
export const someTool: ToolDefinition = { name: "some_tool", parameters: { type: "object", properties: {} } };

/** The Hermes/Qwen3 output parser, with tool calls parsed or not. */
export function hermesParser(options: { startsInReasoning: boolean; parseToolCalls: boolean }): OutputParser {
    return hermesFormat.createParser({ startsInReasoning: options.startsInReasoning, tools: options.parseToolCalls ? [someTool] : [] });
}

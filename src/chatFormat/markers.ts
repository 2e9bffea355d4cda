/**
 * The text markers Maple's templates and models use around reasoning and tool calls (the Qwen3 /
 * Hermes convention). The template side (`promptEndsInsideThink`) and the output parser read them
 * from here so the two can never disagree.
 */

/** Opens a reasoning block. */
export const THINK_OPEN = "<think>";
/** Closes a reasoning block; what follows is the answer. */
export const THINK_CLOSE = "</think>";
/** Opens a tool call whose body is `{"name": …, "arguments": {…}}`. */
export const TOOL_CALL_OPEN = "<tool_call>";
/** Closes a tool call. */
export const TOOL_CALL_CLOSE = "</tool_call>";

import type { ReasoningSwitch } from "../chatFormat/types.js";

/**
 * What a wire format's reasoning field says, in its own words: a switch (Ollama's `think: true`,
 * Anthropic's `thinking.type` enabled or disabled) or a level (OpenAI's `reasoning_effort` and
 * Responses' `reasoning.effort`: none, minimal, low, medium, high, xhigh; Ollama's `think`: low,
 * medium, high, max).
 */
export type ReasoningRequest = boolean | "none" | "minimal" | "low" | "medium" | "high" | "xhigh" | "max";

/**
 * The one decision every API's reasoning field goes through: on or off, and how hard. The model's
 * chat format turns the switch into its template's own variable (Qwen3's `enable_thinking`,
 * gpt-oss's `reasoning_effort`, …), under the request's `chat_template_kwargs`, which win.
 *
 * - Absent (null or undefined): undefined, the template's default (maple-preview thinks).
 * - `false`, `none` and `minimal`: off. OpenAI's `minimal` asks for "very few reasoning tokens";
 *   a template's switch has no such level, and off is the nearest (Maple read it so before).
 * - `true`: on, at the template's default level.
 * - `low`, `medium`, `high`: on, at that level; `xhigh` (OpenAI) and `max` (Ollama) are `high`,
 *   the highest level a template knows.
 */
export function reasoningSwitch(request: ReasoningRequest | null | undefined): ReasoningSwitch | undefined {
    if (request == null) return undefined;
    if (request === false || request === "none" || request === "minimal") return { enabled: false };
    if (request === true) return { enabled: true, effort: undefined };
    return { enabled: true, effort: request === "xhigh" || request === "max" ? "high" : request };
}

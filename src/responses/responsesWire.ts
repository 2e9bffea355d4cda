import { z } from "zod";
import { openAiFields } from "../openai/openAiFields.js";

/**
 * The /v1/responses request as it arrives (OpenAI's Responses API, snake_case). Items and tools
 * are checked loosely here, by `type`, and converted one by one in `responsesRequest.ts`, which
 * names the exact param of whatever it refuses.
 */

const item = z.object({ type: z.string().optional() }).passthrough();
const tool = z.object({ type: z.string() }).passthrough();

const toolChoice = z.union([
    z.enum(["none", "auto", "required"]),
    z.object({ type: z.string(), name: z.string().optional() }).passthrough()
]);

const textFormat = z.object({ type: z.string() }).passthrough();

export const responsesWire = openAiFields.extend({
    model: z.string().nullish(),
    input: z.union([z.string(), z.array(item)]).nullish(),
    instructions: z.string().nullish(),
    tools: z.array(tool).nullish(),
    tool_choice: toolChoice.nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    text: z.object({ format: textFormat.nullish(), verbosity: z.string().nullish() }).passthrough().nullish(),
    reasoning: z.object({
        effort: z.enum(["none", "minimal", "low", "medium", "high", "xhigh"]).nullish(),
        summary: z.enum(["auto", "concise", "detailed"]).nullish(),
        // An older name of `summary`.
        generate_summary: z.enum(["auto", "concise", "detailed"]).nullish()
    }).passthrough().nullish(),
    max_output_tokens: z.number().int().min(1).nullish(),
    top_logprobs: z.number().int().min(0).max(20).nullish(),
    store: z.boolean().nullish(),
    previous_response_id: z.string().min(1).nullish(),
    conversation: z.unknown().optional(),
    metadata: z.record(z.string().max(512)).refine((value) => Object.keys(value).length <= 16, "at most 16 keys").nullish(),
    prompt_cache_key: z.string().nullish(),
    safety_identifier: z.string().nullish(),
    service_tier: z.string().nullish(),
    truncation: z.enum(["auto", "disabled"]).nullish(),
    include: z.array(z.string()).nullish(),
    background: z.boolean().nullish(),
    prompt: z.unknown().optional(),
    max_tool_calls: z.number().int().min(1).nullish(),
    chat_template_kwargs: z.record(z.unknown()).nullish(),
    // OpenAI's user is a string here (deprecated in favour of safety_identifier).
    user: z.string().nullish()
});

export type ResponsesWire = z.infer<typeof responsesWire>;
export type WireItem = z.infer<typeof item>;
export type WireTool = z.infer<typeof tool>;
export type WireToolChoice = z.infer<typeof toolChoice>;

import { z } from "zod";
import { InvalidRequestError } from "../errors.js";
import type { GenerationSettings } from "../core/request.js";
import { maxStopStrings, samplingWire } from "../wire/sampling.js";

/** The fields OpenAI's generation requests share (chat, completions, Responses): the kit's sampling fields and OpenAI's length, stop and stream fields. */
export const openAiFields = samplingWire.extend({
    max_tokens: z.number().int().min(1).nullish(),
    stop: z.union([
        z.string().min(1, "stop strings must not be empty"),
        z.array(z.string().min(1, "stop strings must not be empty")).max(maxStopStrings, `at most ${maxStopStrings} stop strings`)
    ]).nullish(),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().nullish() }).passthrough().nullish(),
    // A conversation key (see wire/conversationKey.ts) when a string; OpenAI's chat takes any.
    user: z.unknown().optional(),
    prompt_cache_key: z.unknown().optional()
});

export function toStopList(stop: string | string[] | null | undefined): string[] {
    if (stop == null) return [];
    return typeof stop === "string" ? [stop] : stop;
}

/** Rejects a field Maple does not support, naming it (the spec's 400 for unsupported fields). */
export function rejectUnsupported(param: string, message: string): never {
    throw new InvalidRequestError(message, param);
}

/** The fields every OpenAI generation request has past the edge, beside the core's own. */
export interface OpenAiRequestFields extends GenerationSettings {
    model: string | undefined;
    stream: boolean;
    /** `stream_options.include_usage`: a last chunk with the usage. */
    includeUsage: boolean;
}

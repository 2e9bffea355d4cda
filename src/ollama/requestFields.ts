import { z } from "zod";
import { InvalidRequestError } from "../errors.js";
import type { GenerationSettings } from "../core/index.js";
import { grammarSchema } from "../grammar/clientSchema.js";
import type { GrammarJsonSchema } from "../grammar/jsonSchemaSubset.js";
import { samplingWire } from "../wire/index.js";
import { wireOptions } from "./options.js";

/**
 * `think`: a switch, or a level (`"low" | "medium" | "high" | "max"`, api.ThinkValue), read by the
 * wire kit's `reasoningSwitch`; absent: the template's default (maple-preview thinks, as Ollama
 * defaults `think` on for thinking models).
 */
const think = z.union([z.boolean(), z.enum(["low", "medium", "high", "max"])], {
    errorMap: () => ({ message: "think must be a boolean or one of \"low\", \"medium\", \"high\", \"max\"" })
});

/** `keep_alive`: a duration ("5m") or seconds: how long the model stays loaded once idle (ollama/keepAlive.ts reads it). */
const keepAlive = z.union([z.string(), z.number()]);

/** The fields `/api/chat` and `/api/generate` share. */
export const generationFields = {
    model: z.string({ required_error: "model is required" }).min(1, "model is required"),
    stream: z.boolean().nullish(),
    format: z.union([z.string(), z.record(z.unknown())]).nullish(),
    options: wireOptions.nullish(),
    think: think.nullish(),
    keep_alive: keepAlive.nullish(),
    logprobs: z.boolean().nullish(),
    top_logprobs: z.number().int().min(0, "top_logprobs must be between 0 and 20").max(20, "top_logprobs must be between 0 and 20").nullish(),
    // Ollama's: the history is cut or shifted when over the context. Maple refuses a prompt over its limit instead.
    truncate: z.boolean().nullish(),
    shift: z.boolean().nullish(),
    // Maple's extension: GBNF constraining the whole output, as on the other routes.
    grammar: samplingWire.shape.grammar
};

/** Ollama's default: stream unless `stream: false`. */
export function streams(stream: boolean | null | undefined): boolean {
    return stream !== false;
}

/**
 * `format` → the JSON the answer must be: `"json"` any JSON object (JSON mode), an object a JSON
 * schema (structured outputs); `""` is none (Ollama's empty format). Enforced by grammar on the
 * answer, as `response_format` is.
 */
export function parseFormat(format: string | Record<string, unknown> | null | undefined): { schema: GrammarJsonSchema | undefined } | undefined {
    if (format == null || format === "") return undefined;
    if (format === "json") return { schema: undefined };
    if (typeof format === "string") throw new InvalidRequestError(`format must be "json" or a JSON schema object; got "${format}".`, "format");
    return { schema: grammarSchema(format, "format") };
}

/** `logprobs` / `top_logprobs` → the core's. */
export function logprobsOf(wire: { logprobs?: boolean | null; top_logprobs?: number | null }): GenerationSettings["logprobs"] {
    return wire.logprobs === true ? { top: wire.top_logprobs ?? 0 } : undefined;
}

/** A field or value Maple does not take on these routes, named in the 400. */
export function refuse(param: string, message: string): never {
    throw new InvalidRequestError(message, param);
}

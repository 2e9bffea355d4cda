import { z } from "zod";
import { InvalidRequestError } from "../errors.js";
import type { GenerationSettings } from "../conversation/request.js";
import type { SamplingOptions } from "../engine/types.js";
import { findGrammarDeadEnd } from "../grammar/deadEnd.js";

/** Maximum stop strings per request (OpenAI allows 4; llama-server and vLLM take more). */
export const maxStopStrings = 16;

const finite = z.number({ invalid_type_error: "must be a number" }).finite();

/** Sampling and length fields shared by /v1/completions and /v1/chat/completions. */
export const samplingFields = {
    temperature: finite.min(0).max(2).nullish(),
    top_p: finite.gt(0).max(1).nullish(),
    // vLLM's -1 and llama-server's 0 both mean "no top-k". llama.cpp reads it as a 32-bit int:
    // a larger one would wrap (2^32 + 5 → 5), so it is refused rather than silently changed.
    top_k: z.number().int().min(-1).max(2 ** 31 - 1).nullish(),
    min_p: finite.min(0).max(1).nullish(),
    repetition_penalty: finite.gt(0).max(10).nullish(),
    presence_penalty: finite.min(-2).max(2).nullish(),
    frequency_penalty: finite.min(-2).max(2).nullish(),
    seed: z.number().int().nullish(),
    max_tokens: z.number().int().min(1).nullish(),
    stop: z.union([
        z.string().min(1, "stop strings must not be empty"),
        z.array(z.string().min(1, "stop strings must not be empty")).max(maxStopStrings, `at most ${maxStopStrings} stop strings`)
    ]).nullish(),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().nullish() }).passthrough().nullish(),
    // llama.cpp's own parser reports malformed grammars; this refuses the well-formed ones no generation can get through.
    grammar: z.string().superRefine((gbnf, context) => {
        const deadEnd = findGrammarDeadEnd(gbnf);
        if (deadEnd !== undefined) context.addIssue({ code: z.ZodIssueCode.custom, message: `${deadEnd}, so a generation that reaches it cannot go on.` });
    }).nullish(),
    ignore_eos: z.boolean().nullish(),
    // OpenAI's: token id (a string key) → bias added to its logit, -100 (banned) to 100.
    logit_bias: z.record(z.string().regex(/^\d+$/, "keys must be token ids"), finite.min(-100).max(100)).nullish(),
    user: z.unknown().optional()
};

export interface SamplingDefaults {
    temperature: number;
    maxNewTokens: number;
    maxNewTokensLimit: number;
}

type SamplingWire = {
    temperature?: number | null; top_p?: number | null; top_k?: number | null; min_p?: number | null;
    repetition_penalty?: number | null; presence_penalty?: number | null; frequency_penalty?: number | null; seed?: number | null;
    ignore_eos?: boolean | null; logit_bias?: Record<string, number> | null;
};

/** Wire sampling fields → the engine's, with Maple's defaults (spec: top_p 0.95, top_k 20). */
export function toSamplingOptions(wire: SamplingWire, defaults: SamplingDefaults): SamplingOptions {
    const topK = wire.top_k ?? 20;
    return {
        temperature: wire.temperature ?? defaults.temperature,
        topP: wire.top_p ?? 0.95,
        topK: topK <= 0 ? 0 : topK,
        minP: wire.min_p ?? undefined,
        // llama.cpp takes a 32-bit seed.
        seed: wire.seed == null ? undefined : Number(BigInt.asUintN(32, BigInt(wire.seed))),
        repetitionPenalty: wire.repetition_penalty ?? undefined,
        presencePenalty: wire.presence_penalty ?? undefined,
        frequencyPenalty: wire.frequency_penalty ?? undefined,
        ignoreEos: wire.ignore_eos ?? undefined,
        logitBias: toLogitBias(wire.logit_bias)
    };
}

/** -100 bans the token outright (OpenAI: "should result in a ban"); other values are added to its logit. */
function toLogitBias(wire: Record<string, number> | null | undefined): Map<number, number> | undefined {
    if (wire == null) return undefined;
    const entries = Object.entries(wire).map(([token, bias]): [number, number] => [Number(token), bias <= -100 ? Number.NEGATIVE_INFINITY : bias]);
    return entries.length === 0 ? undefined : new Map(entries);
}

/** max_tokens: the default when absent, capped (not refused) at the limit. */
export function resolveMaxTokens(requested: number | null | undefined, defaults: SamplingDefaults): number {
    return Math.min(requested ?? defaults.maxNewTokens, defaults.maxNewTokensLimit);
}

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

import { z } from "zod";
import type { SamplingOptions } from "../engine/types.js";
import { findGrammarDeadEnd } from "../grammar/deadEnd.js";

/** Maximum stop strings per request (OpenAI allows 4; llama-server and vLLM take more). */
export const maxStopStrings = 16;

const finite = z.number({ invalid_type_error: "must be a number" }).finite();

/**
 * The sampling fields every wire format takes, in one zod object: spread its `shape` into the
 * format's schema (`.omit` what that format refuses). A new sampling option goes here and in
 * `toSamplingOptions`, and every API has it.
 */
export const samplingWire = z.object({
    temperature: finite.min(0).max(2).nullish(),
    // 0 keeps only the most likely token (llama.cpp's top-p keeps at least one): greedy at any temperature.
    top_p: finite.min(0).max(1).nullish(),
    // vLLM's -1 and llama-server's 0 both mean "no top-k". llama.cpp reads it as a 32-bit int:
    // a larger one would wrap (2^32 + 5 → 5), so it is refused rather than silently changed.
    top_k: z.number().int().min(-1).max(2 ** 31 - 1).nullish(),
    min_p: finite.min(0).max(1).nullish(),
    repetition_penalty: finite.gt(0).max(10).nullish(),
    presence_penalty: finite.min(-2).max(2).nullish(),
    frequency_penalty: finite.min(-2).max(2).nullish(),
    seed: z.number().int().nullish(),
    // llama.cpp's own parser reports malformed grammars; this refuses the well-formed ones no generation can get through.
    grammar: z.string().superRefine((gbnf, context) => {
        const deadEnd = findGrammarDeadEnd(gbnf);
        if (deadEnd !== undefined) context.addIssue({ code: z.ZodIssueCode.custom, message: `${deadEnd}, so a generation that reaches it cannot go on.` });
    }).nullish(),
    ignore_eos: z.boolean().nullish(),
    // OpenAI's: token id (a string key) → bias added to its logit, -100 (banned) to 100.
    logit_bias: z.record(z.string().regex(/^\d+$/, "keys must be token ids"), finite.min(-100).max(100)).nullish()
});

export type SamplingWire = z.infer<typeof samplingWire>;

export interface SamplingDefaults {
    temperature: number;
    maxNewTokens: number;
    maxNewTokensLimit: number;
}

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

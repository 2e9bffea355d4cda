import { z } from "zod";
import { InvalidRequestError } from "../errors.js";
import type { SamplingOptions } from "../engine/types.js";

/** Maximum stop strings per request (OpenAI allows 4; llama-server and vLLM take more). */
export const maxStopStrings = 16;

const finite = z.number({ invalid_type_error: "must be a number" }).finite();

/** Sampling and length fields shared by /v1/completions and /v1/chat/completions. */
export const samplingFields = {
    temperature: finite.min(0).max(2).nullish(),
    top_p: finite.gt(0).max(1).nullish(),
    // vLLM's -1 and llama-server's 0 both mean "no top-k".
    top_k: z.number().int().min(-1).nullish(),
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
    grammar: z.string().nullish(),
    ignore_eos: z.boolean().nullish(),
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
    ignore_eos?: boolean | null;
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
        ignoreEos: wire.ignore_eos ?? undefined
    };
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

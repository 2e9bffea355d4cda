import { z } from "zod";
import type { GenerationSettings } from "../core/index.js";
import { maxStopStrings, resolveMaxTokens, samplingWire, toSamplingOptions, type SamplingDefaults } from "../wire/index.js";

const integer = z.number({ invalid_type_error: "must be an integer" }).int("must be an integer");

/**
 * Ollama's `options` (api.Options, the Modelfile's parameters). The sampling ones map onto the
 * core's; `num_ctx` is accepted and has no effect beyond the slot's context (fixed at start, as
 * `--context-size`); the runner's and the ones llama.cpp dropped (`mirostat`, `tfs_z`,
 * `typical_p`, `num_keep`, `repeat_last_n`, `num_gpu`, …) are accepted and ignored, as Ollama
 * ignores an option it does not know. A known option of the wrong type is a 400 (Ollama's
 * `option "top_k" must be of type integer`).
 */
export const wireOptions = z.object({
    // Ollama's names for the fields every wire format shares, validated alike.
    temperature: samplingWire.shape.temperature,
    top_p: samplingWire.shape.top_p,
    // 0 (and llama.cpp's negative values) mean no top-k.
    top_k: integer.max(2 ** 31 - 1).nullish(),
    min_p: samplingWire.shape.min_p,
    // Ollama's -1 is "a random seed", as no seed.
    seed: integer.nullish(),
    // -1: no limit but Maple's default; -2: fill the context (Maple: its token limit).
    num_predict: integer.min(-2).nullish(),
    stop: z.array(z.string().min(1, "stop strings must not be empty")).max(maxStopStrings, `at most ${maxStopStrings} stop strings`).nullish(),
    repeat_penalty: samplingWire.shape.repetition_penalty,
    presence_penalty: samplingWire.shape.presence_penalty,
    frequency_penalty: samplingWire.shape.frequency_penalty,
    num_ctx: integer.min(1).nullish()
}).passthrough();

export type WireOptions = z.infer<typeof wireOptions>;

/** `options` → the core's sampling, token limit and stop strings, with Maple's defaults (not Ollama's 0.8 / 40 / 0.9). */
export function toGenerationSettings(options: WireOptions | null | undefined, defaults: SamplingDefaults): Pick<GenerationSettings, "sampling" | "maxTokens" | "stop"> {
    const wire = options ?? {};
    const predict = wire.num_predict ?? -1;
    return {
        sampling: toSamplingOptions({
            temperature: wire.temperature, top_p: wire.top_p, top_k: wire.top_k, min_p: wire.min_p,
            seed: wire.seed == null || wire.seed < 0 ? undefined : wire.seed,
            repetition_penalty: wire.repeat_penalty, presence_penalty: wire.presence_penalty, frequency_penalty: wire.frequency_penalty
        }, defaults),
        maxTokens: predict === -2 ? defaults.maxNewTokensLimit : resolveMaxTokens(predict <= 0 ? undefined : predict, defaults),
        stop: wire.stop ?? []
    };
}

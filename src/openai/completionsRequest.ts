import { z } from "zod";
import { InvalidRequestError } from "../errors.js";
import type { CompletionGenerationRequest } from "../core/request.js";
import { conversationKey, parseWire, resolveMaxTokens, toSamplingOptions, type RequestHeaders, type SamplingDefaults } from "../wire/index.js";
import { openAiFields, rejectUnsupported, toStopList, type OpenAiRequestFields } from "./openAiFields.js";

const tokenIds = z.array(z.number().int("token ids must be integers"));

const completionsWire = openAiFields.extend({
    model: z.string().nullish(),
    prompt: z.union([z.string(), z.array(z.string()), tokenIds, z.array(tokenIds)], {
        errorMap: () => ({ message: "must be a string, a list of one string, or a list of token ids" })
    }),
    echo: z.boolean().nullish(),
    suffix: z.string().nullish(),
    // OpenAI's limit for the legacy endpoint.
    logprobs: z.number().int().min(0).max(5).nullish(),
    n: z.number().int().min(1).nullish(),
    best_of: z.number().int().min(1).nullish()
});

/** A /v1/completions request past the edge: validated, defaults applied, camelCase; the core's request plus the wire's own fields. */
export interface CompletionRequest extends CompletionGenerationRequest, OpenAiRequestFields {}

export function parseCompletionRequest(body: unknown, headers: RequestHeaders, defaults: SamplingDefaults): CompletionRequest {
    const wire = parseWire(completionsWire, body);
    if (wire.echo === true) rejectUnsupported("echo", "echo is not supported.");
    if (wire.suffix != null && wire.suffix !== "") rejectUnsupported("suffix", "suffix is not supported.");
    // best_of equal to n is plain n; more would need ranking the choices.
    if ((wire.best_of ?? 1) !== 1 && wire.best_of !== wire.n) rejectUnsupported("best_of", "best_of must be 1 (or equal to n)");
    return {
        model: wire.model ?? undefined,
        prompt: singlePrompt(wire.prompt),
        sampling: toSamplingOptions(wire, defaults),
        maxTokens: resolveMaxTokens(wire.max_tokens, defaults),
        stop: toStopList(wire.stop),
        stream: wire.stream === true,
        includeUsage: wire.stream_options?.include_usage === true,
        grammar: wire.grammar ?? undefined,
        n: wire.n ?? 1,
        logprobs: wire.logprobs == null ? undefined : { top: wire.logprobs },
        cacheKey: conversationKey({ promptCacheKey: wire.prompt_cache_key, user: wire.user }, headers)
    };
}

/** Maple generates one completion per request: a batch of prompts is refused, not half-served. */
function singlePrompt(prompt: string | string[] | number[] | number[][]): CompletionRequest["prompt"] {
    let single: string | number[];
    if (typeof prompt === "string") single = prompt;
    else if (prompt.length === 0) throw new InvalidRequestError("prompt must not be empty.", "prompt");
    else if (typeof prompt[0] === "number") single = prompt as number[];
    else {
        if (prompt.length > 1) throw new InvalidRequestError("Batch prompts are not supported: send one prompt per request.", "prompt");
        single = (prompt as (string | number[])[])[0]!;
    }
    if (single.length === 0) throw new InvalidRequestError("prompt must not be empty.", "prompt");
    return typeof single === "string" ? { text: single } : { tokens: single };
}

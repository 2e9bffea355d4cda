import { z } from "zod";
import { answerConstraint, type ChatGenerationRequest, type CompletionGenerationRequest } from "../core/index.js";
import { conversationKey, parseWire, reasoningSwitch, refuseGrammarWithAnswer, type RequestHeaders, type SamplingDefaults } from "../wire/index.js";
import { toGenerationSettings } from "./options.js";
import { generationFields, logprobsOf, parseFormat, refuse, streams } from "./requestFields.js";

const generateWire = z.object({
    ...generationFields,
    prompt: z.string().nullish(),
    suffix: z.string().nullish(),
    system: z.string().nullish(),
    template: z.string().nullish(),
    context: z.array(z.number().int()).nullish(),
    raw: z.boolean().nullish(),
    images: z.array(z.unknown()).nullish()
});

interface GenerateFields {
    /** The name as the client sent it (Ollama echoes it). */
    model: string;
    stream: boolean;
    /** No prompt: Ollama's "load the model" request, answered `done_reason: "load"` at once. */
    loadOnly: boolean;
}

/**
 * An /api/generate request past the edge: a prompt through the model's template (with `system`
 * first), or with `raw` the prompt as it is (a raw completion: no template, no reasoning split).
 */
export type OllamaGenerateRequest = GenerateFields & (
    | ({ raw: false } & ChatGenerationRequest)
    | ({ raw: true } & CompletionGenerationRequest));

export function parseOllamaGenerateRequest(body: unknown, headers: RequestHeaders, defaults: SamplingDefaults): OllamaGenerateRequest {
    const wire = parseWire(generateWire, body);
    if (wire.suffix != null && wire.suffix !== "") {
        refuse("suffix", "suffix (fill-in-the-middle) is not supported: this model has no infill template. Send the whole prompt instead.");
    }
    if (wire.images != null && wire.images.length > 0) refuse("images", "Images are not supported: this model reads text only.");
    if (wire.template != null && wire.template !== "") {
        refuse("template", "template (a Go template) is not supported: Maple renders the model's own Jinja chat template; send raw: true with a prompt you formatted yourself.");
    }
    if (wire.context != null && wire.context.length > 0) {
        refuse("context", "context (deprecated in Ollama) is not supported: keep the conversation with /api/chat, whose prompt is cached per slot.");
    }
    const prompt = wire.prompt ?? "";
    const common = {
        model: wire.model,
        stream: streams(wire.stream),
        loadOnly: prompt === "",
        ...toGenerationSettings(wire.options, defaults),
        n: 1,
        logprobs: logprobsOf(wire),
        grammar: wire.grammar ?? undefined,
        cacheKey: conversationKey({}, headers)
    };
    const json = parseFormat(wire.format);
    const answer = answerConstraint(json, { type: "none" }, [], true, () => "format");
    if (wire.raw === true) {
        if (wire.system != null && wire.system !== "") refuse("system", "raw mode does not support system: put it in the prompt.");
        if (json !== undefined) refuse("format", "raw mode does not support format: Maple's grammar field constrains a raw prompt's output.");
        return { ...common, raw: true, prompt: { text: prompt } };
    }
    refuseGrammarWithAnswer(answer, wire.grammar, "format");
    const system = wire.system ?? "";
    return {
        ...common,
        raw: false,
        messages: [...(system === "" ? [] : [{ role: "system" as const, content: system }]), { role: "user", content: prompt }],
        tools: [],
        toolChoice: { type: "none" },
        parallelToolCalls: true,
        answer,
        templateKwargs: {},
        reasoning: reasoningSwitch(wire.think),
        includeReasoning: true
    };
}

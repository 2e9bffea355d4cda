import type { FastifyInstance } from "fastify";
import { startTextGenerations, type GeneratedPiece, type GenerationSummary } from "../../generation/generateText.js";
import { parseCompletionRequest } from "../../openai/completionsRequest.js";
import { newId, unixSeconds } from "../../openai/ids.js";
import { CompletionLogprobs, type WireCompletionLogprobs } from "../../openai/logprobs.js";
import { checkLogitBias, checkPromptLength, checkPromptTokenIds, promptTokenLimit, tokenizePrompt } from "../../openai/promptTokens.js";
import { checkChoiceCount } from "../../openai/sampling.js";
import { sumCounts, toWireUsage } from "../../openai/usage.js";
import { collectGenerations, streamGenerations } from "../generationResponse.js";
import { requestCancellation } from "../requestSignal.js";
import type { RouteContext } from "./routeContext.js";

/** POST /v1/completions: the raw prompt to the model, no template, no parsing. */
export function completionsRoute(app: FastifyInstance, context: RouteContext): void {
    app.post("/v1/completions", async (request, reply) => {
        const { engine, scheduler, systemFingerprint } = context.host.requireReady();
        // First, so a client that leaves during any await below still cancels its request.
        const cancellation = requestCancellation(request, reply, context.shutdownSignal);
        const completion = parseCompletionRequest(request.body, context.samplingDefaults);
        const model = context.checkModel(completion.model);
        const limit = promptTokenLimit(engine, context.config.maxPromptTokens);
        const promptTokens = "text" in completion.prompt
            ? tokenizePrompt(engine, completion.prompt.text, limit, "prompt")
            : checkPromptTokenIds(engine, completion.prompt.tokens);
        checkPromptLength(promptTokens, limit, "prompt");
        checkLogitBias(engine, completion.sampling);
        checkChoiceCount(completion.n, scheduler.slots);
        const sampling = completion.grammar === undefined
            ? completion.sampling
            : { ...completion.sampling, grammar: await engine.createGrammar(completion.grammar) };
        const textLog = context.config.logPrompts ? { request, prompt: "text" in completion.prompt ? completion.prompt.text : completion.prompt.tokens } : undefined;
        const generations = await startTextGenerations(engine, scheduler, {
            promptTokens, sampling, maxTokens: completion.maxTokens, stop: completion.stop, signal: cancellation.signal, logprobs: completion.logprobs
        }, Array.from({ length: completion.n }, () => ({ observer: context.metrics.observeGeneration() })));
        const id = newId("cmpl");
        const created = unixSeconds();
        // With include_usage, every chunk but the usage chunk has "usage": null, as OpenAI's do.
        const usageKey = completion.stream && completion.includeUsage ? { usage: null } : {};
        const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> =>
            ({ id, object: "text_completion", created, model, system_fingerprint: systemFingerprint, choices, ...usageKey, ...extra });
        // With `logprobs`, each choice's tokens; a chunk (or the response) carries those not yet sent.
        const logprobs = generations.map(() => (completion.logprobs === undefined ? undefined : new CompletionLogprobs(engine)));
        const addLogprobs = (index: number, piece: GeneratedPiece): void => {
            for (const token of piece.textTokens) logprobs[index]?.add(token);
        };
        const takeLogprobs = (index: number): WireCompletionLogprobs | null => logprobs[index]?.take() ?? null;

        const finishChoice = (index: number, summary: GenerationSummary, text: string): Record<string, unknown> =>
            ({ index, text, logprobs: takeLogprobs(index), finish_reason: summary.finishReason, matched_stop: summary.matchedStop });

        if (!completion.stream) {
            const texts = generations.map(() => "");
            const summaries = await collectGenerations(generations, cancellation, (index, piece) => {
                texts[index] += piece.text;
                addLogprobs(index, piece);
            }, textLog);
            return chunk(summaries.map((summary, index) => finishChoice(index, summary, texts[index]!)), { usage: toWireUsage(sumCounts(summaries)) });
        }
        await streamGenerations(request, reply, cancellation, generations, {
            start: () => [],
            piece: (index, piece) => {
                addLogprobs(index, piece);
                // A token whose text is still held waits for the next chunk, its logprobs with it.
                return piece.text === "" ? [] : [chunk([{ index, text: piece.text, logprobs: takeLogprobs(index), finish_reason: null }])];
            },
            end: (index, summary) => [chunk([finishChoice(index, summary, "")])],
            done: (summaries) => (completion.includeUsage ? [chunk([], { usage: toWireUsage(sumCounts(summaries)) })] : [])
        }, textLog);
    });
}

import type { FastifyInstance } from "fastify";
import { startTextGeneration, type GenerationSummary } from "../../generation/generateText.js";
import { parseCompletionRequest } from "../../openai/completionsRequest.js";
import { newId, unixSeconds } from "../../openai/ids.js";
import { checkPromptLength, checkPromptTokenIds, promptTokenLimit, tokenizePrompt } from "../../openai/promptTokens.js";
import { toWireUsage } from "../../openai/usage.js";
import { collectGeneration, streamGeneration } from "../generationResponse.js";
import { clientGoneSignal } from "../requestSignal.js";
import type { RouteContext } from "./routeContext.js";

/** POST /v1/completions: the raw prompt to the model, no template, no parsing. */
export function completionsRoute(app: FastifyInstance, context: RouteContext): void {
    app.post("/v1/completions", async (request, reply) => {
        const { engine, scheduler } = context.host.requireReady();
        const completion = parseCompletionRequest(request.body, context.samplingDefaults);
        const model = context.checkModel(completion.model);
        const promptTokens = "text" in completion.prompt
            ? tokenizePrompt(engine, completion.prompt.text)
            : checkPromptTokenIds(engine, completion.prompt.tokens);
        checkPromptLength(promptTokens, promptTokenLimit(engine, context.config.maxPromptTokens), "prompt");
        const sampling = completion.grammar === undefined
            ? completion.sampling
            : { ...completion.sampling, grammar: await engine.createGrammar(completion.grammar) };
        const signal = clientGoneSignal(request, reply);
        const generation = await startTextGeneration(engine, scheduler, {
            promptTokens, sampling, maxTokens: completion.maxTokens, stop: completion.stop, signal
        });
        const id = newId("cmpl");
        const created = unixSeconds();
        const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> =>
            ({ id, object: "text_completion", created, model, choices, ...extra });

        const finishChoice = (summary: GenerationSummary, text: string): Record<string, unknown> =>
            ({ index: 0, text, logprobs: null, finish_reason: summary.finishReason, matched_stop: summary.matchedStop });

        if (!completion.stream) {
            let text = "";
            const summary = await collectGeneration(generation, (piece) => (text += piece));
            return chunk([finishChoice(summary, text)], { usage: toWireUsage(summary) });
        }
        await streamGeneration(request, reply, signal, generation, {
            start: () => [],
            text: (text) => (text === "" ? [] : [chunk([{ index: 0, text, logprobs: null, finish_reason: null }])]),
            end: (summary) => [
                chunk([finishChoice(summary, "")]),
                ...(completion.includeUsage ? [chunk([], { usage: toWireUsage(summary) })] : [])
            ]
        });
    });
}

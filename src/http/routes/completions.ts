import type { FastifyInstance } from "fastify";
import type { MapleError} from "../../errors.js";
import { isAbortError, RequestAbortedError } from "../../errors.js";
import { startTextGeneration } from "../../generation/generateText.js";
import { parseCompletionRequest } from "../../openai/completionsRequest.js";
import { newId, unixSeconds } from "../../openai/ids.js";
import { checkPromptLength, checkPromptTokenIds, promptTokenLimit, tokenizePrompt } from "../../openai/promptTokens.js";
import { toWireUsage } from "../../openai/usage.js";
import { toMapleError } from "../errorHandler.js";
import { clientGoneSignal } from "../requestSignal.js";
import { SseStream } from "../sse.js";
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

        if (!completion.stream) {
            try {
                let text = "";
                let next = await generation.pieces.next();
                for (; !next.done; next = await generation.pieces.next()) text += next.value.text;
                const summary = next.value;
                return chunk(
                    [{ index: 0, text, logprobs: null, finish_reason: summary.finishReason, matched_stop: summary.matchedStop }],
                    { usage: toWireUsage(summary) }
                );
            } catch (error) {
                if (isAbortError(error)) throw new RequestAbortedError();
                throw error;
            } finally {
                generation.close();
            }
        }

        const sse = new SseStream(reply);
        try {
            let next = await generation.pieces.next();
            for (; !next.done; next = await generation.pieces.next()) {
                if (next.value.text !== "") {
                    await sse.send(chunk([{ index: 0, text: next.value.text, logprobs: null, finish_reason: null }]));
                }
            }
            const summary = next.value;
            await sse.send(chunk([{ index: 0, text: "", logprobs: null, finish_reason: summary.finishReason, matched_stop: summary.matchedStop }]));
            if (completion.includeUsage) await sse.send(chunk([], { usage: toWireUsage(summary) }));
            await sse.done();
        } catch (error) {
            if (isAbortError(error) || signal.aborted) {
                sse.end();
                return;
            }
            const mapped: MapleError = toMapleError(error);
            request.log.error({ err: error }, "generation failed mid-stream");
            await sse.sendError(mapped);
            await sse.done();
        } finally {
            generation.close();
        }
    });
}

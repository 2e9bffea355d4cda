import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { answerGrammars, answerGrammarSelector, type AnswerConstraint, type AnswerGrammars } from "../../chat/answerGrammar.js";
import type { ChatPrompt } from "../../chat/chatPrompt.js";
import { ChatOutputParser } from "../../chat/outputParser.js";
import type { ChatMessage } from "../../chat/types.js";
import type { Engine } from "../../engine/types.js";
import { InvalidRequestError, isAbortError, NotFoundError, RequestAbortedError, ServerError, ShuttingDownError } from "../../errors.js";
import { startTextGenerations, type GenerationSummary, type TextGeneration } from "../../generation/generateText.js";
import { newId, unixSeconds } from "../../openai/ids.js";
import { checkLogitBias, checkPromptCharacters, promptTokenLimit, tokenizePrompt } from "../../openai/promptTokens.js";
import { renderConversation } from "../../openai/renderConversation.js";
import { ResponseEventWriter, type ResponseEvent } from "../../responses/responseEvents.js";
import type { ResponseIdentity } from "../../responses/responseObject.js";
import { parseResponsesRequest, type ResponsesRequest } from "../../responses/responsesRequest.js";
import { assistantTurn } from "../../responses/outputConversation.js";
import { ResponseStore } from "../../responses/responseStore.js";
import { toMapleError } from "../errorHandler.js";
import { requestCancellation, type RequestCancellation } from "../requestSignal.js";
import { SseStream } from "../sse.js";
import type { RouteContext } from "./routeContext.js";

/** The grammars of `text.format` / an enforced `tool_choice`; one that does not compile is Maple's fault (500). */
async function buildAnswerGrammars(engine: Engine, answer: AnswerConstraint, prompt: ChatPrompt): Promise<AnswerGrammars> {
    try {
        return await answerGrammars(engine, answer, prompt);
    } catch (error) {
        throw new ServerError("The grammar for text.format or tool_choice could not be built.", error);
    }
}

/** A response being generated: POST /v1/responses/{id}/cancel stops it. */
interface RunningResponse {
    cancel: AbortController;
    writer: ResponseEventWriter;
}

/** The conversation a request renders: instructions first, then the turns it continues, then its input. */
function conversationOf(request: ResponsesRequest, earlier: readonly ChatMessage[]): { history: ChatMessage[]; messages: ChatMessage[] } {
    const history = [...earlier, ...request.input];
    const messages: ChatMessage[] = request.instructions === undefined ? history : [{ role: "system", content: request.instructions }, ...history];
    return { history, messages };
}

/**
 * POST /v1/responses and its companions: OpenAI's Responses API over the same template, output
 * parser, grammars, scheduler and engine as chat completions; responses are kept in a bounded
 * in-memory store (`store`, default true) for GET, DELETE, input_items and previous_response_id.
 */
export function responsesRoute(app: FastifyInstance, context: RouteContext): void {
    const { config } = context;
    const store = new ResponseStore({
        maxCount: config.responsesStoreMaxCount, maxBytes: config.responsesStoreMaxBytes, ttlMs: config.responsesStoreTtlSeconds * 1000
    });
    const running = new Map<string, RunningResponse>();

    /** Reads a request into its prompt: the stored turns it continues, the template, the token limit. */
    const preparePrompt = (body: unknown, engine: Engine, template: Parameters<typeof renderConversation>[0]) => {
        const parsed = parseResponsesRequest(body, context.samplingDefaults, (id) => store.item(id));
        const model = context.checkModel(parsed.model);
        let earlier: ChatMessage[] = [];
        if (parsed.previousResponseId !== undefined) {
            const previous = store.get(parsed.previousResponseId);
            if (previous === undefined) {
                throw new NotFoundError(`Previous response with id '${parsed.previousResponseId}' not found: it was not stored (store: false), was deleted, or expired.`,
                    "previous_response_id", "previous_response_not_found");
            }
            earlier = previous.conversation;
        }
        const { history, messages } = conversationOf(parsed, earlier);
        const prompt = renderConversation(template, { messages, tools: parsed.tools, templateKwargs: parsed.templateKwargs });
        return { parsed, model, history, prompt };
    };

    app.post("/v1/responses", async (request, reply) => {
        const { engine, scheduler, chatTemplate } = context.host.requireReady();
        const cancellation = requestCancellation(request, reply, context.shutdownSignal);
        const { parsed, model, history, prompt } = preparePrompt(request.body, engine, chatTemplate);
        const promptTokens = tokenizePrompt(engine, prompt.text, promptTokenLimit(engine, config.maxPromptTokens), "input");
        checkLogitBias(engine, parsed.sampling);
        const sampling = parsed.grammar === undefined ? parsed.sampling : { ...parsed.sampling, grammar: await engine.createGrammar(parsed.grammar) };
        const grammars = parsed.answer === undefined ? undefined : await buildAnswerGrammars(engine, parsed.answer, prompt);
        const parser = new ChatOutputParser({ startsInReasoning: prompt.startsInReasoning, parseToolCalls: prompt.parseToolCalls });
        const cancel = new AbortController();
        const signal = AbortSignal.any([cancellation.signal, cancel.signal]);
        const [generation] = await startTextGenerations(engine, scheduler, {
            promptTokens, sampling, maxTokens: parsed.maxTokens, stop: parsed.stop, signal
        }, [{ grammar: grammars === undefined ? undefined : answerGrammarSelector(parser, grammars), observer: context.metrics.observeGeneration() }]);
        const identity: ResponseIdentity = { id: newId("resp", "_"), createdAt: unixSeconds(), model, echo: parsed.echo };
        const writer = new ResponseEventWriter(identity, {
            tools: parsed.offered, encryptedReasoning: parsed.includeEncryptedReasoning
        });
        running.set(identity.id, { cancel, writer });
        let reasoningTokens = 0;
        const events = async (each: (events: ResponseEvent[]) => Promise<void> | void): Promise<GenerationSummary> => {
            let next = await generation!.pieces.next();
            for (; !next.done; next = await generation!.pieces.next()) {
                if (next.value.token !== undefined && parser.inReasoning) reasoningTokens += 1;
                await each(writer.parts(parser.push(next.value.text)));
            }
            await each(writer.parts(parser.flush()));
            return next.value;
        };
        const keep = (response: Record<string, unknown>): Record<string, unknown> => {
            if (parsed.store) {
                store.put({
                    id: identity.id, response, inputItems: parsed.inputItems,
                    conversation: [...history, assistantTurn(writer.items)]
                });
            }
            return response;
        };
        const finish = (summary: GenerationSummary): ResponseEvent[] => writer.finish(summary.finishReason, { ...summary, reasoningTokens }, unixSeconds());
        try {
            if (!parsed.stream) {
                try {
                    const summary = await events(() => undefined);
                    return keep(finalResponse(finish(summary)));
                } catch (error) {
                    if (cancel.signal.aborted && !cancellation.signal.aborted) return keep(finalResponse(writer.cancel()));
                    throw abortError(error, cancellation);
                }
            }
            await streamResponse(request, reply, cancellation, cancel.signal, generation!, writer, async (send) => {
                await send(writer.start());
                const summary = await events(send);
                const done = finish(summary);
                keep(finalResponse(done));
                await send(done);
            }, (response) => keep(response));
            return reply;
        } finally {
            running.delete(identity.id);
            generation!.close();
        }
    });

    app.get<{ Params: { id: string } }>("/v1/responses/:id", async (request) => {
        const live = running.get(request.params.id);
        if (live !== undefined) return live.writer.response("in_progress");
        return stored(request.params.id).response;
    });

    app.delete<{ Params: { id: string } }>("/v1/responses/:id", async (request) => {
        const { id } = request.params;
        if (!store.delete(id)) throw notFound(id);
        return { id, object: "response", deleted: true };
    });

    app.get<{ Params: { id: string }; Querystring: { order?: string; limit?: string; after?: string } }>("/v1/responses/:id/input_items", async (request) => {
        const items = stored(request.params.id).inputItems;
        return listPage(request.query.order === "asc" ? items : [...items].reverse(), request.query);
    });

    app.post<{ Params: { id: string } }>("/v1/responses/:id/cancel", async (request) => {
        const { id } = request.params;
        const live = running.get(id);
        if (live !== undefined) {
            live.cancel.abort();
            return live.writer.response("cancelled");
        }
        const response = stored(id).response;
        throw new InvalidRequestError(`Response '${id}' has already ended (status ${String(response["status"])}); only a response still generating can be cancelled.`, null, "response_not_cancellable");
    });

    app.post("/v1/responses/input_tokens", async (request) => {
        const { engine, chatTemplate } = context.host.requireReady();
        const { prompt } = preparePrompt(request.body, engine, chatTemplate);
        checkPromptCharacters(prompt.text, engine.runtime.contextSize, "input");
        return { object: "response.input_tokens", input_tokens: engine.tokenize(prompt.text, { specialTokens: true, addBos: true }).length };
    });

    function stored(id: string): NonNullable<ReturnType<ResponseStore["get"]>> {
        const found = store.get(id);
        if (found === undefined) throw notFound(id);
        return found;
    }
}

function notFound(id: string): NotFoundError {
    return new NotFoundError(`Response with id '${id}' not found: it was not stored (store: false), was deleted, or expired.`, "response_id", "response_not_found");
}

/** The response object the last event carries (`response.completed` / `response.incomplete`). */
function finalResponse(events: ResponseEvent[]): Record<string, unknown> {
    return events.at(-1)!["response"] as Record<string, unknown>;
}

function abortError(error: unknown, cancellation: RequestCancellation): unknown {
    if (!isAbortError(error)) return error;
    return cancellation.shutdown.aborted && !cancellation.clientGone.aborted ? new ShuttingDownError() : new RequestAbortedError();
}

/** OpenAI's list page: `{object: "list", data, first_id, last_id, has_more}`, `limit` 1–100 (default 20), after an item id. */
function listPage(items: Record<string, unknown>[], query: { limit?: string; after?: string }): Record<string, unknown> {
    const limit = query.limit === undefined ? 20 : Number(query.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new InvalidRequestError("limit must be a whole number from 1 to 100.", "limit");
    let start = 0;
    if (query.after !== undefined) {
        start = items.findIndex((item) => item["id"] === query.after) + 1;
        if (start === 0) throw new InvalidRequestError(`No input item has the id '${query.after}'.`, "after");
    }
    const data = items.slice(start, start + limit);
    return { object: "list", data, first_id: data[0]?.["id"] ?? null, last_id: data.at(-1)?.["id"] ?? null, has_more: start + limit < items.length };
}

/**
 * Streams one response as named SSE events. After the first byte a failure is an `error` event
 * and `response.failed`; a cancelled response (POST …/cancel) ends with `response.failed` whose
 * status is `cancelled`; a client that went away just ends the stream. No `[DONE]`: OpenAI's
 * Responses stream has none, and the AI SDK would read it as a malformed event.
 */
async function streamResponse(request: FastifyRequest, reply: FastifyReply, cancellation: RequestCancellation, cancelled: AbortSignal,
    generation: TextGeneration, writer: ResponseEventWriter,
    run: (send: (events: ResponseEvent[]) => Promise<void>) => Promise<void>, keep: (response: Record<string, unknown>) => void): Promise<void> {
    const sse = new SseStream(reply);
    const send = async (events: ResponseEvent[]): Promise<void> => {
        for (const event of events) await sse.sendEvent(event.type, event);
    };
    try {
        await run(send);
    } catch (error) {
        generation.cancel();
        if (cancellation.clientGone.aborted) return;
        if (cancelled.aborted && isAbortError(error)) {
            const events = writer.cancel();
            keep(finalResponse(events));
            await send(events);
            return;
        }
        const failure = toMapleError(abortError(error, cancellation));
        if (!(failure instanceof ShuttingDownError)) request.log.error({ err: error }, "generation failed mid-stream");
        await send(writer.fail(failure));
    } finally {
        sse.end();
    }
}

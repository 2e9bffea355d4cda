import type { FastifyInstance } from "fastify";
import type { ChatMessage } from "../../chatFormat/types.js";
import { countChatPromptTokens, startChatGeneration, type ChatGenerationRequest, type GenerationPart } from "../../core/index.js";
import { InvalidRequestError, NotFoundError, RequestAbortedError } from "../../errors.js";
import { unixSeconds } from "../../wire/ids.js";
import { newResponseId } from "../../responses/conversationTag.js";
import { finalResponse, ResponseEventWriter, type ResponseEvent } from "../../responses/responseEvents.js";
import type { ResponseIdentity } from "../../responses/responseObject.js";
import { parseResponsesRequest, type ResponsesRequest } from "../../responses/responsesRequest.js";
import { assistantTurn } from "../../responses/outputConversation.js";
import type { StoredResponse } from "../../responses/responseStore.js";
import { openAiErrorFormat, type ErrorFormat } from "../errorFormat.js";
import { collectGeneration, streamGeneration } from "../generationResponse.js";
import { requestCancellation } from "../requestSignal.js";
import type { SseEvent } from "../sse.js";
import type { RequestHeaders } from "../../wire/conversationKey.js";
import type { RouteContext } from "./routeContext.js";

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

/** Each Responses event is named by its `type`. */
function sseEvents(events: readonly ResponseEvent[]): SseEvent[] {
    return events.map((event) => ({ event: event.type, data: event }));
}

/** The ids of the `item_reference` inputs of a request body, fetched from the store before it is parsed. */
function referencedItemIds(body: unknown): string[] {
    const input = typeof body === "object" && body !== null ? (body as Record<string, unknown>)["input"] : undefined;
    if (!Array.isArray(input)) return [];
    return input.flatMap((item: unknown) => {
        const fields = typeof item === "object" && item !== null ? item as Record<string, unknown> : {};
        return fields["type"] === "item_reference" && typeof fields["id"] === "string" ? [fields["id"]] : [];
    });
}

/**
 * POST /v1/responses and its companions: OpenAI's Responses API on the generation core (the core's
 * parts become Responses events); responses are kept in the response store (`store`, default
 * true; this replica's memory, or Redis shared by a fleet) for GET, DELETE, input_items and
 * previous_response_id.
 */
export function responsesRoute(app: FastifyInstance, context: RouteContext): void {
    const store = context.responseStore;
    const running = new Map<string, RunningResponse>();
    // Another replica's POST /v1/responses/{id}/cancel, relayed by a shared store.
    store.onCancelRequest((id) => {
        const live = running.get(id);
        if (live === undefined) return undefined;
        live.cancel.abort();
        return live.writer.response("cancelled");
    });

    /** Reads a request into the core's: the stored turns it continues, then its own. */
    const prepare = async (body: unknown, headers: RequestHeaders): Promise<{ parsed: ResponsesRequest; history: ChatMessage[]; chat: ChatGenerationRequest }> => {
        const referenced = new Map<string, Record<string, unknown>>();
        for (const id of referencedItemIds(body)) {
            const item = await store.item(id);
            if (item !== undefined) referenced.set(id, item);
        }
        const parsed = parseResponsesRequest(body, headers, context.samplingDefaults, (id) => referenced.get(id));
        let earlier: ChatMessage[] = [];
        if (parsed.previousResponseId !== undefined) {
            const previous = await store.get(parsed.previousResponseId);
            if (previous === undefined) {
                throw new NotFoundError(`Previous response with id '${parsed.previousResponseId}' not found: it was not stored (store: false), was deleted, or expired.`,
                    "previous_response_id", "previous_response_not_found");
            }
            earlier = previous.conversation;
        }
        const { history, messages } = conversationOf(parsed, earlier);
        return { parsed, history, chat: { ...parsed, messages } };
    };

    app.post("/v1/responses", async (request, reply) => {
        // First, so a client that leaves during any await below still cancels its request.
        const cancellation = requestCancellation(request, reply, context.shutdownSignal);
        const { parsed, history, chat } = await prepare(request.body, request.headers);
        const { model, modelId, servedId } = await context.chatModel(reply, parsed.model, cancellation.signal);
        // Refused before any generation: a response that could not be stored would be lost.
        if (parsed.store) store.requireAvailable();
        const cancel = new AbortController();
        const options = { ...context.generationOptions(request, AbortSignal.any([cancellation.signal, cancel.signal]), servedId), promptParam: "input" };
        const generation = await startChatGeneration(model, chat, options);
        const identity: ResponseIdentity = { id: newResponseId(parsed.previousResponseId, request.headers["x-maple-conversation"]), createdAt: unixSeconds(), model: modelId, echo: parsed.echo };
        const writer = new ResponseEventWriter(identity, { tools: parsed.offered, encryptedReasoning: parsed.includeEncryptedReasoning });
        running.set(identity.id, { cancel, writer });
        /**
         * Stores the final response (store: true) and returns the events that carry it, only once
         * the store confirmed it: a store that fails here fails the response (503, or an error event).
         */
        const keep = async (events: ResponseEvent[]): Promise<ResponseEvent[]> => {
            if (parsed.store) {
                await store.put({
                    id: identity.id, response: finalResponse(events), inputItems: parsed.inputItems,
                    conversation: [...history, assistantTurn(writer.items)]
                });
            }
            return events;
        };
        const cancelledByRequest = (): boolean => cancel.signal.aborted && !cancellation.signal.aborted;
        let final: ReturnType<typeof finalResponse> | undefined;
        const events = async (part: GenerationPart): Promise<ResponseEvent[]> => {
            if (part.type !== "finish") return writer.part(part);
            const done = await keep(writer.finish(part.reason, part.usage, unixSeconds()));
            final = finalResponse(done);
            return done;
        };
        try {
            if (parsed.stream) {
                // After the first byte a failure is an `error` event and `response.failed`; a
                // cancelled response ends with `response.failed` whose status is `cancelled`. No
                // `[DONE]`: the Responses stream has none (the AI SDK would read it as a malformed event).
                const errorFormat: ErrorFormat = {
                    response: openAiErrorFormat.response,
                    streamEvents: async (error) => sseEvents(cancelledByRequest() ? await keep(writer.cancel()) : writer.fail(error))
                };
                await streamGeneration(request, reply, cancellation, generation, {
                    start: () => sseEvents(writer.start()),
                    part: async (_choice, part) => sseEvents(await events(part)),
                    end: () => []
                }, errorFormat);
                return reply;
            }
            try {
                await collectGeneration(generation, cancellation, async (_choice, part) => {
                    await events(part);
                });
            } catch (error) {
                if (error instanceof RequestAbortedError && cancelledByRequest()) return finalResponse(await keep(writer.cancel()));
                throw error;
            }
            return final;
        } finally {
            running.delete(identity.id);
        }
    });

    app.get<{ Params: { id: string } }>("/v1/responses/:id", async (request) => {
        const live = running.get(request.params.id);
        if (live !== undefined) return live.writer.response("in_progress");
        return (await stored(request.params.id)).response;
    });

    app.delete<{ Params: { id: string } }>("/v1/responses/:id", async (request) => {
        const { id } = request.params;
        if (!await store.delete(id)) throw notFound(id);
        return { id, object: "response", deleted: true };
    });

    app.get<{ Params: { id: string }; Querystring: { order?: string; limit?: string; after?: string } }>("/v1/responses/:id/input_items", async (request) => {
        const items = (await stored(request.params.id)).inputItems;
        return listPage(request.query.order === "asc" ? items : [...items].reverse(), request.query);
    });

    app.post<{ Params: { id: string } }>("/v1/responses/:id/cancel", async (request) => {
        const { id } = request.params;
        const live = running.get(id);
        if (live !== undefined) {
            live.cancel.abort();
            return live.writer.response("cancelled");
        }
        // Running on another replica: the shared store relays the cancel to it.
        const elsewhere = await store.cancelElsewhere(id);
        if (elsewhere !== undefined) return elsewhere;
        const response = (await stored(id)).response;
        throw new InvalidRequestError(`Response '${id}' has already ended (status ${String(response["status"])}); only a response still generating can be cancelled.`, null, "response_not_cancellable");
    });

    app.post("/v1/responses/input_tokens", async (request, reply) => {
        const { parsed, chat } = await prepare(request.body, request.headers);
        const { model } = await context.chatModel(reply, parsed.model, context.shutdownSignal);
        return { object: "response.input_tokens", input_tokens: countChatPromptTokens(model, chat, { promptParam: "input" }) };
    });

    async function stored(id: string): Promise<StoredResponse> {
        const found = await store.get(id);
        if (found === undefined) throw notFound(id);
        return found;
    }
}

function notFound(id: string): NotFoundError {
    return new NotFoundError(`Response with id '${id}' not found: it was not stored (store: false), was deleted, or expired.`, "response_id", "response_not_found");
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

import { newId } from "../wire/ids.js";
import type {
    ResponseCompletedEvent, ResponseContentPartAddedEvent, ResponseContentPartDoneEvent, ResponseCreatedEvent, ResponseCustomToolCallInputDeltaEvent,
    ResponseCustomToolCallInputDoneEvent, ResponseErrorEvent, ResponseFailedEvent, ResponseFunctionCallArgumentsDeltaEvent, ResponseFunctionCallArgumentsDoneEvent,
    ResponseIncompleteEvent, ResponseInProgressEvent, ResponseOutputItemAddedEvent, ResponseOutputItemDoneEvent, ResponseReasoningSummaryPartAddedEvent,
    ResponseReasoningSummaryPartDoneEvent, ResponseReasoningSummaryTextDeltaEvent, ResponseReasoningSummaryTextDoneEvent, ResponseReasoningTextDeltaEvent,
    ResponseReasoningTextDoneEvent, ResponseTextDeltaEvent, ResponseTextDoneEvent,
    ResponseOutputText
} from "openai/resources/responses/responses";
import { BlockTracker, type BlockStep } from "../wire/blockTracker.js";
import type { FinishPart, GenerationPart } from "../core/index.js";
import type { Sent } from "../wire/sdkShape.js";
import type { MapleError } from "../errors.js";
import { openAiErrorBody } from "../openai/errorBody.js";
import { encodeReasoning } from "./reasoningCarrier.js";
import {
    responseObject, type ResponseIdentity, type ResponseStatus, type ResponseUsageCounts, type SentOutputItem, type SentOutputText, type SentResponse
} from "./responseObject.js";
import type { ResponsesTool } from "./responsesRequest.js";

type WithResponse<E> = Sent<E, never, { response: SentResponse }>;
type WithItem<E> = Sent<E, never, { item: SentOutputItem }>;
type WithTextPart<E extends { part: unknown }> = Sent<E, never, { part: Sent<ResponseOutputText, never, { annotations: [] }> | { type: "reasoning_text"; text: string } }>;

/** One streamed event, checked against the openai SDK's `ResponseStreamEvent`s; `type` is also its SSE event name. */
export type ResponseEvent =
    | WithResponse<ResponseCreatedEvent> | WithResponse<ResponseInProgressEvent>
    | WithResponse<ResponseCompletedEvent> | WithResponse<ResponseIncompleteEvent> | WithResponse<ResponseFailedEvent>
    | WithItem<ResponseOutputItemAddedEvent> | WithItem<ResponseOutputItemDoneEvent>
    | WithTextPart<ResponseContentPartAddedEvent> | WithTextPart<ResponseContentPartDoneEvent>
    | ResponseReasoningSummaryPartAddedEvent | ResponseReasoningSummaryPartDoneEvent
    | ResponseReasoningTextDeltaEvent | ResponseReasoningTextDoneEvent | ResponseReasoningSummaryTextDeltaEvent | ResponseReasoningSummaryTextDoneEvent
    | Sent<ResponseTextDeltaEvent, never, { logprobs: [] }> | Sent<ResponseTextDoneEvent, never, { logprobs: [] }>
    | ResponseFunctionCallArgumentsDeltaEvent | ResponseFunctionCallArgumentsDoneEvent
    | ResponseCustomToolCallInputDeltaEvent | ResponseCustomToolCallInputDoneEvent
    | Sent<ResponseErrorEvent, never, { code: string }>;

export interface ResponseWriterOptions {
    /** Every offered tool: a call's name says whether it goes out as `function_call` or `custom_tool_call`. */
    tools: readonly ResponsesTool[];
    /** Reasoning items carry `encrypted_content` (Maple's readable carrier, see reasoningCarrier.ts). */
    encryptedReasoning: boolean;
    /** Ids for output items; random by default, fixed in tests. */
    newId?: (prefix: string) => string;
}

/**
 * Folds a Responses stream's events into what they describe: the output items (each as its
 * `output_item.added` announced it, then as its `output_item.done` carried it whole) and the
 * response the last lifecycle event carried (the SDKs' `finalResponse()`).
 */
export class ResponseBuilder {
    private readonly output: SentOutputItem[] = [];
    private last: SentResponse | undefined;

    add(events: readonly ResponseEvent[]): void {
        for (const event of events) {
            switch (event.type) {
                case "response.output_item.added":
                case "response.output_item.done":
                    this.output[event.output_index] = { ...event.item };
                    break;
                case "response.created":
                case "response.in_progress":
                case "response.completed":
                case "response.incomplete":
                case "response.failed":
                    this.last = event.response;
                    break;
                default:
                    break;
            }
        }
    }

    /** The output items so far (an open item as it was announced). */
    get items(): readonly SentOutputItem[] {
        return this.output;
    }

    /** The response the last lifecycle event carried: after the stream's end, the whole response. */
    build(): SentResponse {
        if (this.last === undefined) throw new Error("ResponseBuilder.build called before response.created");
        return this.last;
    }
}

/** The final response of a stream's events: what its last lifecycle event carries. */
export function finalResponse(events: readonly ResponseEvent[]): SentResponse {
    const builder = new ResponseBuilder();
    builder.add(events);
    return builder.build();
}

/** The open reasoning or message item: its id, for the events of its deltas and its end. */
interface OpenItem {
    kind: "reasoning" | "text";
    id: string;
    outputIndex: number;
}

/**
 * Reasoning goes out twice: as the item's `content` (`reasoning_text`, the open-weights form
 * the openai SDK accumulates) and as its `summary`. Maple has no summariser, so the summary is the
 * trace itself; it is always sent because the AI SDK and Codex read reasoning only from summaries.
 *
 * Turns the generation core's parts into the Responses API's streaming events, numbered by
 * `sequence_number`; the shared `BlockTracker` decides where each item starts and ends. The
 * response objects it sends (the final event's, GET's while it runs) hold the output items as
 * its own events fold (`ResponseBuilder`), so the stream and the whole response cannot drift
 * apart. Pure: no I/O, no clock (`completedAt` comes in).
 *
 * Event order per item, as OpenAI sends it: `output_item.added`, then for reasoning
 * `content_part.added` + `reasoning_summary_part.added`, and per delta `reasoning_text.delta` +
 * `reasoning_summary_text.delta`; for a message `content_part.added` +
 * `output_text.delta`…, for a tool call its arguments (or a custom call's input) as one delta;
 * then the `.done` events and `output_item.done`. A new item closes the open one.
 */
export class ResponseEventWriter {
    private sequence = 0;
    private readonly blocks = new BlockTracker();
    private readonly built = new ResponseBuilder();
    private open: OpenItem | undefined;
    private readonly newId: (prefix: string) => string;

    constructor(private readonly identity: ResponseIdentity, private readonly options: ResponseWriterOptions) {
        this.newId = options.newId ?? ((prefix) => newId(prefix, "_"));
    }

    /** The output items so far (the open one as it was announced). */
    get items(): readonly SentOutputItem[] {
        return this.built.items;
    }

    /** `response.created` and `response.in_progress`. */
    start(): ResponseEvent[] {
        const snapshot = responseObject(this.identity, "in_progress", []);
        return this.emit([
            { type: "response.created", sequence_number: this.sequence++, response: snapshot },
            { type: "response.in_progress", sequence_number: this.sequence++, response: snapshot }
        ]);
    }

    /**
     * Events for one part of the core's stream. `finish` goes to `finish` instead (it needs the
     * clock); logprobs are not served here (refused at the edge).
     */
    part(part: Exclude<GenerationPart, FinishPart>): ResponseEvent[] {
        const steps = this.blocks.step(part);
        // The per-token path: one delta step, no allocation beyond its events.
        if (steps.length === 1 && steps[0]!.type === "delta") return this.emit(this.delta(steps[0]!.kind, steps[0]!.text));
        return this.emit(steps.flatMap((step) => this.stepEvents(step, "completed")));
    }

    /**
     * The end of generation: closes the open item and sends `response.completed`, or
     * `response.incomplete` when max_output_tokens cut it (the open item is then incomplete too).
     */
    finish(finishReason: FinishPart["reason"], usage: ResponseUsageCounts, completedAt: number): ResponseEvent[] {
        const cut = finishReason === "length";
        const events = this.emit(this.closeOpen(cut ? "incomplete" : "completed"));
        const response = this.response(cut ? "incomplete" : "completed", { usage, completedAt, ...(cut ? { incompleteReason: "max_output_tokens" as const } : {}) });
        return [...events, ...this.emit([{ type: cut ? "response.incomplete" : "response.completed", sequence_number: this.sequence++, response }])];
    }

    /** A failure after the stream began: OpenAI's `error` event, then `response.failed`. */
    fail(error: MapleError): ResponseEvent[] {
        const events = this.emit(this.closeOpen("incomplete"));
        const code = error.code ?? openAiErrorBody(error).error.type;
        events.push(...this.emit([{ type: "error", sequence_number: this.sequence++, code, message: error.message, param: error.param }]));
        return [...events, ...this.emit([{ type: "response.failed", sequence_number: this.sequence++, response: this.response("failed", { error: { code, message: error.message } }) }])];
    }

    /**
     * Cancelled by POST /v1/responses/{id}/cancel: the open item ends incomplete, and the stream
     * ends with `response.failed` whose response has status `cancelled` (OpenAI's stream events
     * have no cancelled event of their own).
     */
    cancel(): ResponseEvent[] {
        const events = this.emit(this.closeOpen("incomplete"));
        return [...events, ...this.emit([{ type: "response.failed", sequence_number: this.sequence++, response: this.response("cancelled") }])];
    }

    /** The response object as it stands. */
    response(status: ResponseStatus, details: Parameters<typeof responseObject>[3] = {}): SentResponse {
        return responseObject(this.identity, status, this.built.items.map((item) => ({ ...item })), details);
    }

    /** Every event goes through here, so the output items are always the fold of what was sent. */
    private emit(events: ResponseEvent[]): ResponseEvent[] {
        this.built.add(events);
        return events;
    }

    private closeOpen(status: "completed" | "incomplete"): ResponseEvent[] {
        return this.blocks.close().flatMap((step) => this.stepEvents(step, status));
    }

    private stepEvents(step: BlockStep, status: "completed" | "incomplete"): ResponseEvent[] {
        switch (step.type) {
            case "start":
                return this.openItem(step.kind, step.index);
            case "delta":
                return this.delta(step.kind, step.text);
            case "end":
                return this.closeItem(step.index, step.text, status);
            case "tool-call":
                return this.toolCall(step.index, step.name, step.arguments);
        }
    }

    private openItem(kind: "reasoning" | "text", outputIndex: number): ResponseEvent[] {
        const id = this.newId(kind === "reasoning" ? "rs" : "msg");
        this.open = { kind, id, outputIndex };
        const at = { item_id: id, output_index: outputIndex };
        if (kind === "reasoning") {
            const item: SentOutputItem = { id, type: "reasoning", status: "in_progress", summary: [], content: [], ...(this.options.encryptedReasoning ? { encrypted_content: null } : {}) };
            return [
                { type: "response.output_item.added", sequence_number: this.sequence++, output_index: outputIndex, item },
                { type: "response.content_part.added", sequence_number: this.sequence++, ...at, content_index: 0, part: { type: "reasoning_text", text: "" } },
                { type: "response.reasoning_summary_part.added", sequence_number: this.sequence++, ...at, summary_index: 0, part: { type: "summary_text", text: "" } }
            ];
        }
        return [
            { type: "response.output_item.added", sequence_number: this.sequence++, output_index: outputIndex, item: { id, type: "message", status: "in_progress", role: "assistant", content: [] } },
            { type: "response.content_part.added", sequence_number: this.sequence++, ...at, content_index: 0, part: { type: "output_text", text: "", annotations: [] } }
        ];
    }

    /** The per-token path: event objects built as literals (no spreads), since it runs once per token. */
    private delta(kind: "reasoning" | "text", text: string): ResponseEvent[] {
        const { id: itemId, outputIndex } = this.open!;
        if (kind === "reasoning") {
            return [
                { type: "response.reasoning_text.delta", sequence_number: this.sequence++, item_id: itemId, output_index: outputIndex, content_index: 0, delta: text },
                { type: "response.reasoning_summary_text.delta", sequence_number: this.sequence++, item_id: itemId, output_index: outputIndex, summary_index: 0, delta: text }
            ];
        }
        return [{ type: "response.output_text.delta", sequence_number: this.sequence++, item_id: itemId, output_index: outputIndex, content_index: 0, delta: text, logprobs: [] }];
    }

    /** Ends the open item: its `.done` events and `output_item.done` with the whole item. */
    private closeItem(outputIndex: number, text: string, status: "completed" | "incomplete"): ResponseEvent[] {
        const { kind, id } = this.open!;
        this.open = undefined;
        const at = { item_id: id, output_index: outputIndex };
        if (kind === "reasoning") {
            const part = { type: "reasoning_text" as const, text };
            const summary = { type: "summary_text" as const, text };
            const item: SentOutputItem = {
                id, type: "reasoning", status, summary: [summary], content: [part],
                ...(this.options.encryptedReasoning ? { encrypted_content: encodeReasoning(text) } : {})
            };
            return [
                { type: "response.reasoning_text.done", sequence_number: this.sequence++, ...at, content_index: 0, text },
                { type: "response.content_part.done", sequence_number: this.sequence++, ...at, content_index: 0, part },
                { type: "response.reasoning_summary_text.done", sequence_number: this.sequence++, ...at, summary_index: 0, text },
                { type: "response.reasoning_summary_part.done", sequence_number: this.sequence++, ...at, summary_index: 0, part: summary },
                { type: "response.output_item.done", sequence_number: this.sequence++, output_index: outputIndex, item }
            ];
        }
        const part: SentOutputText = { type: "output_text", text, annotations: [], logprobs: [] };
        return [
            { type: "response.output_text.done", sequence_number: this.sequence++, ...at, content_index: 0, text, logprobs: [] },
            { type: "response.content_part.done", sequence_number: this.sequence++, ...at, content_index: 0, part },
            { type: "response.output_item.done", sequence_number: this.sequence++, output_index: outputIndex, item: { id, type: "message", status, role: "assistant", content: [part] } }
        ];
    }

    /** A whole tool call (the parser decides a call once its block closes): added, its arguments as one delta, done. */
    private toolCall(outputIndex: number, name: string, args: string): ResponseEvent[] {
        const tool = this.options.tools.find((candidate) => candidate.definition.name === name);
        const namespace = tool?.namespace === undefined ? {} : { namespace: tool.namespace };
        const callId = this.newId("call");
        if (tool?.kind === "custom") {
            const input = customInput(args);
            const id = this.newId("ctc");
            const at = { item_id: id, output_index: outputIndex };
            return [
                { type: "response.output_item.added", sequence_number: this.sequence++, output_index: outputIndex, item: { id, type: "custom_tool_call", status: "in_progress", call_id: callId, ...namespace, name, input: "" } },
                { type: "response.custom_tool_call_input.delta", sequence_number: this.sequence++, ...at, delta: input },
                { type: "response.custom_tool_call_input.done", sequence_number: this.sequence++, ...at, input },
                { type: "response.output_item.done", sequence_number: this.sequence++, output_index: outputIndex, item: { id, type: "custom_tool_call", status: "completed", call_id: callId, ...namespace, name, input } }
            ];
        }
        const id = this.newId("fc");
        const at = { item_id: id, output_index: outputIndex };
        return [
            { type: "response.output_item.added", sequence_number: this.sequence++, output_index: outputIndex, item: { id, type: "function_call", status: "in_progress", call_id: callId, ...namespace, name, arguments: "" } },
            { type: "response.function_call_arguments.delta", sequence_number: this.sequence++, ...at, delta: args },
            { type: "response.function_call_arguments.done", sequence_number: this.sequence++, ...at, name, arguments: args },
            { type: "response.output_item.done", sequence_number: this.sequence++, output_index: outputIndex, item: { id, type: "function_call", status: "completed", call_id: callId, ...namespace, name, arguments: args } }
        ];
    }
}

/** A freeform tool's text: the model called it as a function with one string argument, `input`. */
function customInput(args: string): string {
    try {
        const value = JSON.parse(args) as Record<string, unknown>;
        if (typeof value["input"] === "string") return value["input"];
    } catch {
        // not the one-argument object: the client gets the model's text as it is
    }
    return args;
}

import { randomBytes } from "node:crypto";
import type { FinishPart, GenerationPart } from "../conversation/index.js";
import type { MapleError } from "../errors.js";
import { openAiErrorBody } from "../openai/errorBody.js";
import { encodeReasoning } from "./reasoningCarrier.js";
import { responseObject, type ResponseIdentity, type ResponseStatus, type ResponseUsageCounts } from "./responseObject.js";
import type { ResponsesTool } from "./responsesRequest.js";

/** One streamed event: `type` is also its SSE event name. */
export interface ResponseEvent {
    type: string;
    sequence_number: number;
    [key: string]: unknown;
}

export interface ResponseWriterOptions {
    /** Every offered tool: a call's name says whether it goes out as `function_call` or `custom_tool_call`. */
    tools: readonly ResponsesTool[];
    /** Reasoning items carry `encrypted_content` (Maple's readable carrier, see reasoningCarrier.ts). */
    encryptedReasoning: boolean;
    /** Ids for output items; random by default, fixed in tests. */
    newId?: (prefix: string) => string;
}

/** The output item still receiving text: a reasoning item or a message. */
interface OpenItem {
    kind: "reasoning" | "message";
    outputIndex: number;
    item: Record<string, unknown>;
    text: string;
}

function randomItemId(prefix: string): string {
    return `${prefix}_${randomBytes(16).toString("hex")}`;
}

/**
 * Reasoning goes out twice: as the item's `content` (`reasoning_text`, the open-weights form
 * the openai SDK accumulates) and as its `summary`. Maple has no summariser, so the summary is the
 * trace itself; it is always sent because the AI SDK and Codex read reasoning only from summaries.
 *
 * Turns the generation core's parts into the Responses API's streaming events, numbered by
 * `sequence_number`, and keeps the response's output items as they grow: the non-streaming
 * response, the stored one and the final event are all snapshots of the same state, so the two
 * paths cannot drift apart. Pure: no I/O, no clock (`completedAt` comes in).
 *
 * Event order per item, as OpenAI sends it: `output_item.added`, then for reasoning
 * `content_part.added` + `reasoning_summary_part.added`, and per delta `reasoning_text.delta` +
 * `reasoning_summary_text.delta`; for a message `content_part.added` +
 * `output_text.delta`…, for a tool call its arguments (or a custom call's input) as one delta;
 * then the `.done` events and `output_item.done`. A new item closes the open one.
 */
export class ResponseEventWriter {
    private sequence = 0;
    private readonly output: Record<string, unknown>[] = [];
    private open: OpenItem | undefined;
    private readonly newId: (prefix: string) => string;

    constructor(private readonly identity: ResponseIdentity, private readonly options: ResponseWriterOptions) {
        this.newId = options.newId ?? randomItemId;
    }

    /** The output items so far (the open one as it stands). */
    get items(): readonly Record<string, unknown>[] {
        return this.output;
    }

    private event(type: string, fields: Record<string, unknown>): ResponseEvent {
        return { type, sequence_number: this.sequence++, ...fields };
    }

    /** `response.created` and `response.in_progress`. */
    start(): ResponseEvent[] {
        const snapshot = responseObject(this.identity, "in_progress", []);
        return [this.event("response.created", { response: snapshot }), this.event("response.in_progress", { response: snapshot })];
    }

    /**
     * Events for one part of the core's stream. `finish` goes to `finish` instead (it needs the
     * clock); logprobs are not served here (refused at the edge).
     */
    part(part: Exclude<GenerationPart, FinishPart>): ResponseEvent[] {
        const events: ResponseEvent[] = [];
        if (part.type === "tool-call") {
            this.close(events, "completed");
            this.toolCall(events, part.name, part.arguments);
        } else if (part.type !== "logprobs") {
            const kind = part.type === "reasoning-delta" ? "reasoning" : "message";
            if (this.open?.kind !== kind) {
                this.close(events, "completed");
                this.openItem(events, kind);
            }
            this.delta(events, this.open!, part.text);
        }
        return events;
    }

    /**
     * The end of generation: closes the open item and sends `response.completed`, or
     * `response.incomplete` when max_output_tokens cut it (the open item is then incomplete too).
     */
    finish(finishReason: FinishPart["reason"], usage: ResponseUsageCounts, completedAt: number): ResponseEvent[] {
        const events: ResponseEvent[] = [];
        const cut = finishReason === "length";
        this.close(events, cut ? "incomplete" : "completed");
        const response = this.response(cut ? "incomplete" : "completed", { usage, completedAt, ...(cut ? { incompleteReason: "max_output_tokens" as const } : {}) });
        events.push(this.event(cut ? "response.incomplete" : "response.completed", { response }));
        return events;
    }

    /** A failure after the stream began: OpenAI's `error` event, then `response.failed`. */
    fail(error: MapleError): ResponseEvent[] {
        const events: ResponseEvent[] = [];
        this.close(events, "incomplete");
        const code = error.code ?? openAiErrorBody(error).error.type;
        events.push(this.event("error", { code, message: error.message, param: error.param }));
        events.push(this.event("response.failed", { response: this.response("failed", { error: { code, message: error.message } }) }));
        return events;
    }

    /**
     * Cancelled by POST /v1/responses/{id}/cancel: the open item ends incomplete, and the stream
     * ends with `response.failed` whose response has status `cancelled` (OpenAI's stream events
     * have no cancelled event of their own).
     */
    cancel(): ResponseEvent[] {
        const events: ResponseEvent[] = [];
        this.close(events, "incomplete");
        events.push(this.event("response.failed", { response: this.response("cancelled") }));
        return events;
    }

    /** The response object as it stands. */
    response(status: ResponseStatus, details: Parameters<typeof responseObject>[3] = {}): Record<string, unknown> {
        return responseObject(this.identity, status, this.output.map((item) => ({ ...item })), details);
    }

    private openItem(events: ResponseEvent[], kind: "reasoning" | "message"): void {
        const outputIndex = this.output.length;
        const item: Record<string, unknown> = kind === "reasoning"
            ? { id: this.newId("rs"), type: "reasoning", status: "in_progress", summary: [], content: [], ...(this.options.encryptedReasoning ? { encrypted_content: null } : {}) }
            : { id: this.newId("msg"), type: "message", status: "in_progress", role: "assistant", content: [] };
        this.output.push(item);
        const open: OpenItem = { kind, outputIndex, item, text: "" };
        this.open = open;
        const at = { item_id: item["id"], output_index: outputIndex };
        events.push(this.event("response.output_item.added", { output_index: outputIndex, item: { ...item, summary: [], content: [] } }));
        if (kind === "reasoning") {
            events.push(this.event("response.content_part.added", { ...at, content_index: 0, part: { type: "reasoning_text", text: "" } }));
            events.push(this.event("response.reasoning_summary_part.added", { ...at, summary_index: 0, part: { type: "summary_text", text: "" } }));
        } else {
            events.push(this.event("response.content_part.added", { ...at, content_index: 0, part: { type: "output_text", text: "", annotations: [] } }));
        }
    }

    /** The per-token path: event objects built as literals (no spreads), since it runs once per token. */
    private delta(events: ResponseEvent[], open: OpenItem, text: string): void {
        open.text += text;
        const itemId = open.item["id"];
        const outputIndex = open.outputIndex;
        if (open.kind === "reasoning") {
            events.push({ type: "response.reasoning_text.delta", sequence_number: this.sequence++, item_id: itemId, output_index: outputIndex, content_index: 0, delta: text });
            events.push({ type: "response.reasoning_summary_text.delta", sequence_number: this.sequence++, item_id: itemId, output_index: outputIndex, summary_index: 0, delta: text });
        } else {
            events.push({ type: "response.output_text.delta", sequence_number: this.sequence++, item_id: itemId, output_index: outputIndex, content_index: 0, delta: text, logprobs: [] });
        }
    }

    /** Ends the open item: its `.done` events and `output_item.done` with the whole item. */
    private close(events: ResponseEvent[], status: "completed" | "incomplete"): void {
        const open = this.open;
        if (open === undefined) return;
        this.open = undefined;
        const { item, text } = open;
        const at = { item_id: item["id"], output_index: open.outputIndex };
        if (open.kind === "reasoning") {
            const part = { type: "reasoning_text", text };
            item["content"] = [part];
            events.push(this.event("response.reasoning_text.done", { ...at, content_index: 0, text }));
            events.push(this.event("response.content_part.done", { ...at, content_index: 0, part }));
            const summary = { type: "summary_text", text };
            item["summary"] = [summary];
            events.push(this.event("response.reasoning_summary_text.done", { ...at, summary_index: 0, text }));
            events.push(this.event("response.reasoning_summary_part.done", { ...at, summary_index: 0, part: summary }));
            if (this.options.encryptedReasoning) item["encrypted_content"] = encodeReasoning(text);
        } else {
            const part = { type: "output_text", text, annotations: [], logprobs: [] };
            item["content"] = [part];
            events.push(this.event("response.output_text.done", { ...at, content_index: 0, text, logprobs: [] }));
            events.push(this.event("response.content_part.done", { ...at, content_index: 0, part }));
        }
        item["status"] = status;
        events.push(this.event("response.output_item.done", { output_index: open.outputIndex, item: { ...item } }));
    }

    /** A whole tool call (the parser decides a call once its block closes): added, its arguments as one delta, done. */
    private toolCall(events: ResponseEvent[], name: string, args: string): void {
        const tool = this.options.tools.find((candidate) => candidate.definition.name === name);
        const outputIndex = this.output.length;
        const namespace = tool?.namespace === undefined ? {} : { namespace: tool.namespace };
        const callId = this.newId("call");
        if (tool?.kind === "custom") {
            const input = customInput(args);
            const item: Record<string, unknown> = { id: this.newId("ctc"), type: "custom_tool_call", status: "in_progress", call_id: callId, ...namespace, name, input: "" };
            const at = { item_id: item["id"], output_index: outputIndex };
            this.output.push(item);
            events.push(this.event("response.output_item.added", { output_index: outputIndex, item: { ...item } }));
            events.push(this.event("response.custom_tool_call_input.delta", { ...at, delta: input }));
            events.push(this.event("response.custom_tool_call_input.done", { ...at, input }));
            Object.assign(item, { input, status: "completed" });
            events.push(this.event("response.output_item.done", { output_index: outputIndex, item: { ...item } }));
            return;
        }
        const item: Record<string, unknown> = { id: this.newId("fc"), type: "function_call", status: "in_progress", call_id: callId, ...namespace, name, arguments: "" };
        const at = { item_id: item["id"], output_index: outputIndex };
        this.output.push(item);
        events.push(this.event("response.output_item.added", { output_index: outputIndex, item: { ...item } }));
        events.push(this.event("response.function_call_arguments.delta", { ...at, delta: args }));
        events.push(this.event("response.function_call_arguments.done", { ...at, name, arguments: args }));
        Object.assign(item, { arguments: args, status: "completed" });
        events.push(this.event("response.output_item.done", { output_index: outputIndex, item: { ...item } }));
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

import type {
    InputJSONDelta, Message, MessageDeltaUsage, OutputTokensDetails, RawContentBlockDeltaEvent, RawContentBlockStartEvent, RawContentBlockStopEvent,
    RawMessageDeltaEvent, RawMessageStartEvent, RawMessageStopEvent, SignatureDelta, StopReason as SdkStopReason, TextBlock, TextDelta, ThinkingBlock,
    ThinkingDelta, ToolUseBlock, Usage
} from "@anthropic-ai/sdk/resources/messages";
import { BlockTracker, type BlockStep } from "../wire/blockTracker.js";
import type { FinishPart, GenerationPart } from "../core/index.js";
import type { Sent } from "../wire/sdkShape.js";
import { newId } from "../wire/ids.js";
import { thinkingSignature } from "./thinkingSignature.js";

/**
 * Messages' wire objects as Maple sends them, checked against `@anthropic-ai/sdk`'s own types.
 * Maple leaves out what it never has (containers, diagnostics, server tools, citations, cache
 * breakdowns, callers), and adds `output_tokens_details` to the streamed usage (the SDK has it
 * on `MessageDeltaUsage` only).
 */
type SentUsage = Sent<Usage, "cache_creation" | "inference_geo" | "server_tool_use" | "service_tier" | "speed" | "output_tokens_details",
    { output_tokens_details?: OutputTokensDetails }>;
export type SentContentBlock = ThinkingBlock | Sent<TextBlock, "citations"> | Sent<ToolUseBlock, "caller" | "toolset_name">;
export type SentMessage = Sent<Message, "container" | "diagnostics" | "stop_details", { content: SentContentBlock[]; usage: SentUsage }>;
type SentDeltaUsage = Sent<MessageDeltaUsage, "server_tool_use", { input_tokens: number; cache_creation_input_tokens: number; cache_read_input_tokens: number; output_tokens_details: OutputTokensDetails }>;
/** The events of a Messages stream, each with its data's `type` as its SSE `event:` name. */
export type MessagesEventData =
    | Sent<RawMessageStartEvent, never, { message: SentMessage }>
    | Sent<RawContentBlockStartEvent, never, { content_block: SentContentBlock }>
    | Sent<RawContentBlockDeltaEvent, never, { delta: ThinkingDelta | SignatureDelta | TextDelta | InputJSONDelta }>
    | RawContentBlockStopEvent
    | Sent<RawMessageDeltaEvent, never, { delta: Sent<RawMessageDeltaEvent.Delta, "container" | "stop_details">; usage: SentDeltaUsage }>
    | RawMessageStopEvent
    /** `ping` is in Anthropic's stream but not in the SDK's event union (its client skips it). */
    | { type: "ping" };

/** One server-sent event of a Messages stream: its `event:` name and its `data:` JSON. */
export interface MessagesEvent {
    event: MessagesEventData["type"];
    data: MessagesEventData;
}

export interface MessageIdentity {
    id: string;
    model: string;
    /** `thinking.display: "omitted"`: thinking blocks are sent empty, with the signature only. */
    omitThinking: boolean;
}

/** The prompt's token counts, known before generation. */
export interface PromptCounts {
    promptTokens: number;
    /** Prompt tokens reused from the slot's cache. */
    cachedTokens: number;
}

/** The stop reasons Maple gives (no refusals, pauses or server tools). */
export type StopReason = Extract<SdkStopReason, "end_turn" | "max_tokens" | "stop_sequence" | "tool_use">;

/** A fresh `msg_…` id. */
export function newMessageId(): string {
    return newId("msg", "_");
}

/**
 * Anthropic's usage: `input_tokens` are the prompt tokens evaluated for this request, and
 * `cache_read_input_tokens` those reused from the slot's prefix cache (their sum is the prompt).
 * Maple caches every evaluated token by itself, so nothing counts as a cache write.
 */
function usage(counts: PromptCounts): { input_tokens: number; cache_creation_input_tokens: number; cache_read_input_tokens: number } {
    return {
        input_tokens: counts.promptTokens - counts.cachedTokens,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: counts.cachedTokens
    };
}

/** The token limit (or the context) wins; then a turn with tool calls; then a stop string; else the model's own end. */
export function stopReason(finish: Pick<FinishPart, "reason" | "matchedStop" | "toolCalls">): StopReason {
    if (finish.reason === "length") return "max_tokens";
    if (finish.toolCalls > 0) return "tool_use";
    return typeof finish.matchedStop === "string" ? "stop_sequence" : "end_turn";
}

/** An event whose SSE name is its data's `type`. */
function named(data: MessagesEventData): MessagesEvent {
    return { event: data.type, data };
}

/**
 * Turns the generation core's parts into the events of Anthropic's Messages stream: content
 * blocks numbered from 0 in order (the shared `BlockTracker` decides where each starts and
 * ends), each `content_block_start`, its deltas, `content_block_stop` (a thinking block ends
 * with its `signature_delta`; a tool call is one `input_json_delta` holding its whole input).
 * Pure: no I/O. The non-streaming message is these same events folded by `MessageBuilder`, so
 * the two cannot drift apart.
 */
export class MessageEventWriter {
    private readonly blocks = new BlockTracker();

    constructor(private readonly identity: MessageIdentity) {}

    /** `message_start`: the empty message, with the prompt's usage. */
    start(counts: PromptCounts): MessagesEvent[] {
        const { id, model } = this.identity;
        return [named({
            type: "message_start",
            message: {
                id, type: "message", role: "assistant", model, content: [],
                stop_reason: null, stop_sequence: null,
                usage: { ...usage(counts), output_tokens: 0 }
            }
        })];
    }

    /** The events of one part (none for logprobs, which Anthropic's API has no place for). */
    part(part: GenerationPart): MessagesEvent[] {
        const events = this.blocks.step(part).flatMap((step) => this.blockEvents(step));
        if (part.type === "finish") events.push(...this.finish(part));
        return events;
    }

    private blockEvents(step: BlockStep): MessagesEvent[] {
        const { index } = step;
        switch (step.type) {
            case "start":
                return [named({ type: "content_block_start", index, content_block: step.kind === "reasoning" ? { type: "thinking", thinking: "", signature: "" } : { type: "text", text: "" } })];
            case "delta":
                if (step.kind === "reasoning") return this.identity.omitThinking ? [] : [named({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: step.text } })];
                return [named({ type: "content_block_delta", index, delta: { type: "text_delta", text: step.text } })];
            case "end":
                return [
                    ...(step.kind === "reasoning" ? [named({ type: "content_block_delta", index, delta: { type: "signature_delta", signature: thinkingSignature(step.text) } })] : []),
                    named({ type: "content_block_stop", index })
                ];
            case "tool-call":
                return [
                    named({ type: "content_block_start", index, content_block: { type: "tool_use", id: newId("toolu", "_"), name: step.name, input: {} } }),
                    named({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: step.arguments } }),
                    named({ type: "content_block_stop", index })
                ];
        }
    }

    /** `message_delta` (stop reason, final usage) and `message_stop`, once the open block is closed. */
    private finish(finish: FinishPart): MessagesEvent[] {
        const reason = stopReason(finish);
        const { usage: counts } = finish;
        return [named({
            type: "message_delta",
            delta: { stop_reason: reason, stop_sequence: reason === "stop_sequence" ? finish.matchedStop as string : null },
            usage: { ...usage(counts), output_tokens: counts.completionTokens, output_tokens_details: { thinking_tokens: counts.reasoningTokens } }
        }), named({ type: "message_stop" })];
    }
}

/** `ping`: sent while the prompt is evaluated, so clients and proxies see the stream alive. */
export function pingEvent(): MessagesEvent {
    return named({ type: "ping" });
}

/**
 * Folds a Messages stream's events into the message they describe: the non-streaming response
 * (what the SDK's `finalMessage()` does on the client side).
 */
export class MessageBuilder {
    private message: SentMessage | undefined;
    private readonly blocks: SentContentBlock[] = [];
    private readonly toolInputs = new Map<number, string>();

    add(events: readonly MessagesEvent[]): void {
        for (const { data } of events) this.apply(data);
    }

    /** The whole message; call after `message_stop`. */
    build(): SentMessage {
        if (this.message === undefined) throw new Error("MessageBuilder.build called before message_start");
        return this.message;
    }

    private apply(data: MessagesEventData): void {
        switch (data.type) {
            case "message_start":
                this.message = { ...data.message, content: this.blocks };
                break;
            case "content_block_start":
                this.blocks[data.index] = { ...data.content_block };
                break;
            case "content_block_delta":
                this.applyDelta(this.blocks[data.index]!, data.index, data.delta);
                break;
            case "content_block_stop": {
                const block = this.blocks[data.index]!;
                const input = this.toolInputs.get(data.index);
                if (input !== undefined && block.type === "tool_use") block.input = JSON.parse(input) as unknown;
                break;
            }
            case "message_delta": {
                const message = this.message!;
                Object.assign(message, data.delta);
                message.usage = { ...message.usage, ...data.usage };
                break;
            }
            default:
                break;
        }
    }

    private applyDelta(block: SentContentBlock, index: number, delta: Extract<MessagesEventData, { type: "content_block_delta" }>["delta"]): void {
        if (delta.type === "thinking_delta" && block.type === "thinking") block.thinking += delta.thinking;
        else if (delta.type === "signature_delta" && block.type === "thinking") block.signature = delta.signature;
        else if (delta.type === "text_delta" && block.type === "text") block.text += delta.text;
        else if (delta.type === "input_json_delta") this.toolInputs.set(index, (this.toolInputs.get(index) ?? "") + delta.partial_json);
    }
}

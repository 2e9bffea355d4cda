import type { FinishPart, GenerationPart } from "../conversation/index.js";
import { newId } from "../openai/ids.js";
import { thinkingSignature } from "./thinkingSignature.js";

/** One server-sent event of a Messages stream: its `event:` name and its `data:` JSON. */
export interface MessagesEvent {
    event: string;
    data: Record<string, unknown>;
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

export type StopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use";

/** A fresh `msg_…` id. */
export function newMessageId(): string {
    return newId("msg", "_");
}

/**
 * Anthropic's usage: `input_tokens` are the prompt tokens evaluated for this request, and
 * `cache_read_input_tokens` those reused from the slot's prefix cache (their sum is the prompt).
 * Maple caches every evaluated token by itself, so nothing counts as a cache write.
 */
function usage(counts: PromptCounts): Record<string, number> {
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

type OpenBlock = { type: "thinking"; text: string } | { type: "text" };

/**
 * Turns the generation core's parts into the events of Anthropic's Messages stream: content
 * blocks numbered from 0 in order, each `content_block_start`, its deltas, `content_block_stop`
 * (a thinking block ends with its `signature_delta`; a tool call is one `input_json_delta`
 * holding its whole input). Pure: no I/O. The non-streaming message is these same events folded
 * by `MessageBuilder`, so the two cannot drift apart.
 */
export class MessageEventWriter {
    private nextIndex = 0;
    private open: OpenBlock | undefined;

    constructor(private readonly identity: MessageIdentity) {}

    /** `message_start`: the empty message, with the prompt's usage. */
    start(counts: PromptCounts): MessagesEvent[] {
        const { id, model } = this.identity;
        return [{
            event: "message_start",
            data: {
                type: "message_start",
                message: {
                    id, type: "message", role: "assistant", model, content: [],
                    stop_reason: null, stop_sequence: null,
                    usage: { ...usage(counts), output_tokens: 0 }
                }
            }
        }];
    }

    /** The events of one part (none for logprobs, which Anthropic's API has no place for). */
    part(part: GenerationPart): MessagesEvent[] {
        const events: MessagesEvent[] = [];
        switch (part.type) {
            case "reasoning-delta":
                this.thinking(part.text, events);
                break;
            case "text-delta":
                this.text(part.text, events);
                break;
            case "tool-call":
                this.toolUse(part, events);
                break;
            case "finish":
                this.finish(part, events);
                break;
            case "logprobs":
                break;
        }
        return events;
    }

    /** Closes the open block; `message_delta` (stop reason, final usage) and `message_stop`. */
    private finish(finish: FinishPart, events: MessagesEvent[]): void {
        this.close(events);
        const reason = stopReason(finish);
        const { usage: counts } = finish;
        events.push({
            event: "message_delta",
            data: {
                type: "message_delta",
                delta: { stop_reason: reason, stop_sequence: reason === "stop_sequence" ? finish.matchedStop : null },
                usage: { ...usage(counts), output_tokens: counts.completionTokens, output_tokens_details: { thinking_tokens: counts.reasoningTokens } }
            }
        }, { event: "message_stop", data: { type: "message_stop" } });
    }

    private thinking(text: string, events: MessagesEvent[]): void {
        if (text === "") return;
        if (this.open?.type !== "thinking") this.begin({ type: "thinking", text: "" }, { type: "thinking", thinking: "", signature: "" }, events);
        const open = this.open as { type: "thinking"; text: string };
        open.text += text;
        if (!this.identity.omitThinking) this.delta({ type: "thinking_delta", thinking: text }, events);
    }

    private text(text: string, events: MessagesEvent[]): void {
        if (text === "") return;
        if (this.open?.type !== "text") this.begin({ type: "text" }, { type: "text", text: "" }, events);
        this.delta({ type: "text_delta", text }, events);
    }

    private toolUse(call: Extract<GenerationPart, { type: "tool-call" }>, events: MessagesEvent[]): void {
        this.close(events);
        const index = this.nextIndex++;
        events.push({
            event: "content_block_start",
            data: { type: "content_block_start", index, content_block: { type: "tool_use", id: newId("toolu", "_"), name: call.name, input: {} } }
        }, {
            event: "content_block_delta",
            data: { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: call.arguments } }
        }, { event: "content_block_stop", data: { type: "content_block_stop", index } });
    }

    private begin(block: OpenBlock, contentBlock: Record<string, unknown>, events: MessagesEvent[]): void {
        this.close(events);
        this.open = block;
        events.push({ event: "content_block_start", data: { type: "content_block_start", index: this.nextIndex, content_block: contentBlock } });
    }

    private delta(delta: Record<string, unknown>, events: MessagesEvent[]): void {
        events.push({ event: "content_block_delta", data: { type: "content_block_delta", index: this.nextIndex, delta } });
    }

    private close(events: MessagesEvent[]): void {
        if (this.open === undefined) return;
        if (this.open.type === "thinking") this.delta({ type: "signature_delta", signature: thinkingSignature(this.open.text) }, events);
        events.push({ event: "content_block_stop", data: { type: "content_block_stop", index: this.nextIndex } });
        this.open = undefined;
        this.nextIndex += 1;
    }
}

/** `ping`: sent while the prompt is evaluated, so clients and proxies see the stream alive. */
export function pingEvent(): MessagesEvent {
    return { event: "ping", data: { type: "ping" } };
}

/**
 * Folds a Messages stream's events into the message they describe: the non-streaming response
 * (what the SDK's `finalMessage()` does on the client side).
 */
export class MessageBuilder {
    private message: Record<string, unknown> | undefined;
    private readonly blocks: Record<string, unknown>[] = [];
    private readonly toolInputs = new Map<number, string>();

    add(events: readonly MessagesEvent[]): void {
        for (const { data } of events) this.apply(data);
    }

    /** The whole message; call after `message_stop`. */
    build(): Record<string, unknown> {
        if (this.message === undefined) throw new Error("MessageBuilder.build called before message_start");
        return this.message;
    }

    private apply(data: Record<string, unknown>): void {
        switch (data["type"]) {
            case "message_start":
                this.message = { ...(data["message"] as Record<string, unknown>), content: this.blocks };
                break;
            case "content_block_start":
                this.blocks[data["index"] as number] = { ...(data["content_block"] as Record<string, unknown>) };
                break;
            case "content_block_delta":
                this.applyDelta(data["index"] as number, data["delta"] as Record<string, string>);
                break;
            case "content_block_stop": {
                const index = data["index"] as number;
                const input = this.toolInputs.get(index);
                if (input !== undefined) this.blocks[index]!["input"] = JSON.parse(input) as unknown;
                break;
            }
            case "message_delta": {
                const message = this.message!;
                Object.assign(message, data["delta"] as Record<string, unknown>);
                message["usage"] = { ...(message["usage"] as Record<string, unknown>), ...(data["usage"] as Record<string, unknown>) };
                break;
            }
            default:
                break;
        }
    }

    private applyDelta(index: number, delta: Record<string, string>): void {
        const block = this.blocks[index]!;
        switch (delta["type"]) {
            case "thinking_delta":
                block["thinking"] = String(block["thinking"]) + delta["thinking"];
                break;
            case "signature_delta":
                block["signature"] = delta["signature"];
                break;
            case "text_delta":
                block["text"] = String(block["text"]) + delta["text"];
                break;
            case "input_json_delta":
                this.toolInputs.set(index, (this.toolInputs.get(index) ?? "") + delta["partial_json"]);
                break;
            default:
                break;
        }
    }
}

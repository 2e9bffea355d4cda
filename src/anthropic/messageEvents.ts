import type { OutputPart } from "../chat/types.js";
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

/** How a generation ended, and its counts. */
export interface MessageEnd extends PromptCounts {
    finishReason: "stop" | "length";
    /** The stop string that matched, or the end-of-generation token id; null otherwise. */
    matchedStop: string | number | null;
    completionTokens: number;
    /** Generated tokens that were reasoning (inside the think block). */
    reasoningTokens: number;
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

export function stopReason(end: Pick<MessageEnd, "finishReason" | "matchedStop">, toolCalls: number): StopReason {
    if (end.finishReason === "length") return "max_tokens";
    if (toolCalls > 0) return "tool_use";
    return typeof end.matchedStop === "string" ? "stop_sequence" : "end_turn";
}

type OpenBlock = { type: "thinking"; text: string } | { type: "text" };

/**
 * Turns the output parser's parts into the events of Anthropic's Messages stream: content
 * blocks numbered from 0 in order, each `content_block_start`, its deltas, `content_block_stop`
 * (a thinking block ends with its `signature_delta`; a tool call is one `input_json_delta`
 * holding its whole input). Pure: no I/O. The non-streaming message is these same events folded
 * by `MessageBuilder`, so the two cannot drift apart.
 */
export class MessageEventWriter {
    private nextIndex = 0;
    private open: OpenBlock | undefined;
    private toolCalls = 0;

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

    parts(parts: readonly OutputPart[]): MessagesEvent[] {
        const events: MessagesEvent[] = [];
        for (const part of parts) {
            if (part.type === "reasoning") this.thinking(part.text, events);
            else if (part.type === "content") this.text(part.text, events);
            else this.toolUse(part, events);
        }
        return events;
    }

    /** Closes the open block; `message_delta` (stop reason, final usage) and `message_stop`. */
    finish(end: MessageEnd): MessagesEvent[] {
        const events: MessagesEvent[] = [];
        this.close(events);
        const reason = stopReason(end, this.toolCalls);
        events.push({
            event: "message_delta",
            data: {
                type: "message_delta",
                delta: { stop_reason: reason, stop_sequence: reason === "stop_sequence" ? end.matchedStop : null },
                usage: { ...usage(end), output_tokens: end.completionTokens, output_tokens_details: { thinking_tokens: end.reasoningTokens } }
            }
        }, { event: "message_stop", data: { type: "message_stop" } });
        return events;
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

    private toolUse(call: Extract<OutputPart, { type: "tool_call" }>, events: MessagesEvent[]): void {
        this.close(events);
        const index = this.nextIndex++;
        events.push({
            event: "content_block_start",
            data: { type: "content_block_start", index, content_block: { type: "tool_use", id: newId("toolu", "_"), name: call.name, input: {} } }
        }, {
            event: "content_block_delta",
            data: { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: call.arguments } }
        }, { event: "content_block_stop", data: { type: "content_block_stop", index } });
        this.toolCalls += 1;
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

import type { OutputPart } from "../chat/types.js";
import type { FinishReason, GenerationSummary } from "../generation/generateText.js";
import { newId } from "./ids.js";
import { toWireUsage, type WireUsage } from "./usage.js";

export type ChatFinishReason = FinishReason | "tool_calls";

interface WireToolCall {
    id: string;
    type: "function";
    function: { name: string; arguments: string };
}

export interface ChatCompletionIdentity {
    id: string;
    created: number;
    model: string;
    /** The peer API's `metadata.weight_version` (MAPLE_WEIGHT_VERSION). */
    weightVersion: string;
    /** false: reasoning is generated and counted but not sent (include_reasoning: false). */
    includeReasoning: boolean;
}

/** Tool calls get their wire id once, here, so a streamed call and the final message agree. */
function toWireToolCall(part: Extract<OutputPart, { type: "tool_call" }>): WireToolCall {
    return { id: newId("call", "_"), type: "function", function: { name: part.name, arguments: part.arguments } };
}

export function chatFinishReason(summary: GenerationSummary, toolCalls: number): ChatFinishReason {
    return summary.finishReason === "stop" && toolCalls > 0 ? "tool_calls" : summary.finishReason;
}

function chatUsage(summary: GenerationSummary, reasoningTokens: number): WireUsage {
    return toWireUsage(summary, reasoningTokens);
}

/**
 * Turns parser parts into OpenAI chat chunks. The non-streaming response is built from the same
 * parts by `ChatMessageCollector`, so the two cannot drift apart.
 */
export class ChatChunkWriter {
    private toolCallCount = 0;

    constructor(private readonly identity: ChatCompletionIdentity) {}

    private chunk(choices: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
        const { id, created, model } = this.identity;
        return { id, object: "chat.completion.chunk", created, model, choices, ...extra };
    }

    private delta(delta: Record<string, unknown>): Record<string, unknown> {
        return this.chunk([{ index: 0, delta, logprobs: null, finish_reason: null }]);
    }

    /** The first chunk: the openai stream helper needs `role` before anything else. */
    first(): Record<string, unknown> {
        return this.delta({ role: "assistant", content: "" });
    }

    /** Chunks for newly decided parts; a tool call is one delta with index, id, type, name and arguments. */
    parts(parts: readonly OutputPart[]): Record<string, unknown>[] {
        const chunks: Record<string, unknown>[] = [];
        for (const part of parts) {
            if (part.type === "reasoning") {
                if (this.identity.includeReasoning && part.text !== "") chunks.push(this.delta({ reasoning_content: part.text }));
            } else if (part.type === "content") {
                if (part.text !== "") chunks.push(this.delta({ content: part.text }));
            } else {
                const call = toWireToolCall(part);
                chunks.push(this.delta({ tool_calls: [{ index: this.toolCallCount, ...call }] }));
                this.toolCallCount += 1;
            }
        }
        return chunks;
    }

    finish(summary: GenerationSummary): Record<string, unknown> {
        return this.chunk(
            [{ index: 0, delta: {}, logprobs: null, finish_reason: chatFinishReason(summary, this.toolCallCount), matched_stop: summary.matchedStop }],
            { metadata: { weight_version: this.identity.weightVersion } }
        );
    }

    usage(summary: GenerationSummary, reasoningTokens: number): Record<string, unknown> {
        return this.chunk([], { usage: chatUsage(summary, reasoningTokens) });
    }
}

/** Collects parser parts into the non-streaming `chat.completion`. */
export class ChatMessageCollector {
    private reasoning = "";
    private content = "";
    private readonly toolCalls: WireToolCall[] = [];

    constructor(private readonly identity: ChatCompletionIdentity) {}

    add(parts: readonly OutputPart[]): void {
        for (const part of parts) {
            if (part.type === "reasoning") this.reasoning += part.text;
            else if (part.type === "content") this.content += part.text;
            else this.toolCalls.push(toWireToolCall(part));
        }
    }

    response(summary: GenerationSummary, reasoningTokens: number): Record<string, unknown> {
        const { id, created, model, includeReasoning, weightVersion } = this.identity;
        const onlyToolCalls = this.toolCalls.length > 0 && this.content.trim() === "";
        const message: Record<string, unknown> = {
            role: "assistant",
            content: onlyToolCalls ? null : this.content,
            ...(includeReasoning ? { reasoning_content: this.reasoning === "" ? null : this.reasoning } : {}),
            ...(this.toolCalls.length > 0 ? { tool_calls: this.toolCalls } : {})
        };
        return {
            id, object: "chat.completion", created, model,
            choices: [{
                index: 0, message, logprobs: null,
                finish_reason: chatFinishReason(summary, this.toolCalls.length),
                matched_stop: summary.matchedStop
            }],
            usage: chatUsage(summary, reasoningTokens),
            metadata: { weight_version: weightVersion }
        };
    }
}


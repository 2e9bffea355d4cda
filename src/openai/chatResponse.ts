import type { OutputPart } from "../chat/types.js";
import type { FinishReason, GenerationSummary } from "../generation/generateText.js";
import { newId } from "./ids.js";
import { chatLogprobs, type WireChatLogprob } from "./logprobs.js";
import { toWireUsage, type UsageCounts, type WireUsage } from "./usage.js";

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
    /** OpenAI's `system_fingerprint`, on the response and every chunk. */
    systemFingerprint: string;
    /** `stream_options.include_usage`: then every chunk but the usage chunk has `"usage": null`, as OpenAI's do. */
    includeUsage: boolean;
}

/** Tool calls get their wire id once, here, so a streamed call and the final message agree. */
function toWireToolCall(part: Extract<OutputPart, { type: "tool_call" }>): WireToolCall {
    return { id: newId("call", "_"), type: "function", function: { name: part.name, arguments: part.arguments } };
}

export function chatFinishReason(summary: GenerationSummary, toolCalls: number): ChatFinishReason {
    return summary.finishReason === "stop" && toolCalls > 0 ? "tool_calls" : summary.finishReason;
}

function chatUsage(counts: UsageCounts, reasoningTokens: number): WireUsage {
    return toWireUsage(counts, reasoningTokens);
}

/**
 * Turns parser parts into OpenAI chat chunks. The non-streaming response is built from the same
 * parts by `ChatMessageCollector`, so the two cannot drift apart.
 */
export class ChatChunkWriter {
    private toolCallCount = 0;

    /** `index`: the choice this writer streams (n > 1 interleaves the choices' chunks). */
    constructor(private readonly identity: ChatCompletionIdentity, private readonly index = 0) {}

    private chunk(choices: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
        const { id, created, model, systemFingerprint, includeUsage } = this.identity;
        return { id, object: "chat.completion.chunk", created, model, system_fingerprint: systemFingerprint, choices, ...(includeUsage ? { usage: null } : {}), ...extra };
    }

    private delta(delta: Record<string, unknown>): Record<string, unknown> {
        return this.chunk([{ index: this.index, delta, logprobs: null, finish_reason: null }]);
    }

    /** Puts the logprobs of the tokens whose text `chunks` carry on the first of them. */
    private withLogprobs(chunks: Record<string, unknown>[], logprobs: WireChatLogprob[] | undefined): Record<string, unknown>[] {
        const choice = (chunks[0]?.["choices"] as Record<string, unknown>[] | undefined)?.[0];
        if (choice !== undefined && logprobs !== undefined && logprobs.length > 0) choice["logprobs"] = chatLogprobs(logprobs);
        return chunks;
    }

    /** The first chunk: the openai stream helper needs `role` before anything else. */
    first(): Record<string, unknown> {
        return this.delta({ role: "assistant", content: "" });
    }

    /**
     * Chunks for newly decided parts; a tool call is one delta with index, id, type, name and
     * arguments. `logprobs` (of the tokens not yet sent) go on the first chunk; none is made for
     * them alone, so the caller keeps them for the next chunk when this returns none.
     */
    parts(parts: readonly OutputPart[], logprobs?: WireChatLogprob[]): Record<string, unknown>[] {
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
        return this.withLogprobs(chunks, logprobs);
    }

    /** The choice's last chunk, carrying the logprobs no earlier chunk took. */
    finish(summary: GenerationSummary, logprobs?: WireChatLogprob[]): Record<string, unknown> {
        return this.withLogprobs([this.chunk(
            [{ index: this.index, delta: {}, logprobs: null, finish_reason: chatFinishReason(summary, this.toolCallCount), matched_stop: summary.matchedStop }],
            { metadata: { weight_version: this.identity.weightVersion } }
        )], logprobs)[0]!;
    }

    /** The usage chunk (`choices: []`), for the whole request: `counts` summed over its choices. */
    usage(counts: UsageCounts, reasoningTokens: number): Record<string, unknown> {
        return this.chunk([], { usage: chatUsage(counts, reasoningTokens) });
    }
}

/** Collects parser parts into the non-streaming `chat.completion`. */
export class ChatMessageCollector {
    private reasoning = "";
    private content = "";
    private readonly toolCalls: WireToolCall[] = [];
    private readonly logprobs: WireChatLogprob[] = [];

    /** `index`: the choice this collector builds. */
    constructor(private readonly identity: ChatCompletionIdentity, private readonly index = 0) {}

    /** With `logprobs: true`: one generated token's entry, in order. */
    addLogprob(entry: WireChatLogprob): void {
        this.logprobs.push(entry);
    }

    add(parts: readonly OutputPart[]): void {
        for (const part of parts) {
            if (part.type === "reasoning") this.reasoning += part.text;
            else if (part.type === "content") this.content += part.text;
            else this.toolCalls.push(toWireToolCall(part));
        }
    }

    /** This choice of the `chat.completion`; `withLogprobs`: the request asked for them. */
    choice(summary: GenerationSummary, withLogprobs: boolean): Record<string, unknown> {
        const { includeReasoning } = this.identity;
        const onlyToolCalls = this.toolCalls.length > 0 && this.content.trim() === "";
        const message: Record<string, unknown> = {
            role: "assistant",
            content: onlyToolCalls ? null : this.content,
            ...(includeReasoning ? { reasoning_content: this.reasoning === "" ? null : this.reasoning } : {}),
            ...(this.toolCalls.length > 0 ? { tool_calls: this.toolCalls } : {})
        };
        return {
            index: this.index, message, logprobs: withLogprobs ? chatLogprobs(this.logprobs) : null,
            finish_reason: chatFinishReason(summary, this.toolCalls.length),
            matched_stop: summary.matchedStop
        };
    }
}

/** The non-streaming `chat.completion`: its choices, and the usage of all of them (`counts` summed). */
export function chatCompletion(identity: ChatCompletionIdentity, choices: Record<string, unknown>[], counts: UsageCounts,
    reasoningTokens: number): Record<string, unknown> {
    const { id, created, model, weightVersion, systemFingerprint } = identity;
    return {
        id, object: "chat.completion", created, model, system_fingerprint: systemFingerprint, choices,
        usage: chatUsage(counts, reasoningTokens),
        metadata: { weight_version: weightVersion }
    };
}


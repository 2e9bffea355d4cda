import type { FinishPart, GenerationPart, Usage } from "../conversation/index.js";
import { newId } from "./ids.js";
import { chatLogprobs, toChatLogprob, type WireChatLogprob } from "./logprobs.js";
import { toWireUsage } from "./usage.js";

export type ChatFinishReason = FinishPart["reason"] | "tool_calls";

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
function toWireToolCall(part: Extract<GenerationPart, { type: "tool-call" }>): WireToolCall {
    return { id: newId("call", "_"), type: "function", function: { name: part.name, arguments: part.arguments } };
}

/** A turn that ended with tool calls is `tool_calls`; one cut by the token limit stays `length`. */
export function chatFinishReason(finish: FinishPart): ChatFinishReason {
    return finish.reason === "stop" && finish.toolCalls > 0 ? "tool_calls" : finish.reason;
}

/** An SSE event's data, as the HTTP layer's stream writer takes it. */
interface ChunkEvent {
    data: Record<string, unknown>;
}

/**
 * Turns one choice's parts into OpenAI chat chunks. The non-streaming response is built from the
 * same parts by `ChatMessageCollector`, so the two cannot drift apart.
 */
export class ChatChunkWriter {
    private toolCallCount = 0;
    /** The logprobs of tokens whose text no chunk carried yet: the next chunk carries them. */
    private logprobs: WireChatLogprob[] = [];

    /** `index`: the choice this writer streams (n > 1 interleaves the choices' chunks). */
    constructor(private readonly identity: ChatCompletionIdentity, private readonly index = 0) {}

    private chunk(choices: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
        const { id, created, model } = this.identity;
        return { id, object: "chat.completion.chunk", created, model, choices, ...extra };
    }

    /** A chunk of `choice`, carrying the logprobs not yet sent. */
    private choiceChunk(choice: Record<string, unknown>, extra?: Record<string, unknown>): Record<string, unknown> {
        if (this.logprobs.length > 0) {
            choice["logprobs"] = chatLogprobs(this.logprobs);
            this.logprobs = [];
        }
        return this.chunk([choice], extra);
    }

    private delta(delta: Record<string, unknown>): Record<string, unknown> {
        return this.choiceChunk({ index: this.index, delta, logprobs: null, finish_reason: null });
    }

    /** The first chunk: the openai stream helper needs `role` before anything else. */
    first(): Record<string, unknown> {
        return this.delta({ role: "assistant", content: "" });
    }

    /**
     * The chunks of one part (none for a logprobs part: its entry waits for the next chunk). A
     * tool call is one delta with index, id, type, name and arguments.
     */
    part(part: GenerationPart): Record<string, unknown>[] {
        switch (part.type) {
            case "logprobs":
                this.logprobs.push(toChatLogprob(part.token));
                return [];
            case "reasoning-delta":
                return part.text === "" ? [] : [this.delta({ reasoning_content: part.text })];
            case "text-delta":
                return part.text === "" ? [] : [this.delta({ content: part.text })];
            case "tool-call": {
                const chunk = this.delta({ tool_calls: [{ index: this.toolCallCount, ...toWireToolCall(part) }] });
                this.toolCallCount += 1;
                return [chunk];
            }
            case "finish":
                return [this.finish(part)];
        }
    }

    /** The choice's last chunk, carrying the logprobs no earlier chunk took. */
    private finish(finish: FinishPart): Record<string, unknown> {
        return this.choiceChunk(
            { index: this.index, delta: {}, logprobs: null, finish_reason: chatFinishReason(finish), matched_stop: finish.matchedStop },
            { metadata: { weight_version: this.identity.weightVersion } }
        );
    }

    /** The usage chunk (`choices: []`), for the whole request. */
    usage(usage: Usage): Record<string, unknown> {
        return this.chunk([], { usage: toWireUsage(usage, true) });
    }
}

/** A streamed `chat.completion.chunk` response: the events of all its choices, then `[DONE]`. */
export class ChatCompletionStream {
    readonly lastData = "[DONE]";
    private readonly writers: ChatChunkWriter[];

    /** `includeUsage`: `stream_options.include_usage`, a last chunk with the usage. */
    constructor(identity: ChatCompletionIdentity, choices: number, private readonly includeUsage: boolean) {
        this.writers = Array.from({ length: choices }, (_, index) => new ChatChunkWriter(identity, index));
    }

    start(): ChunkEvent[] {
        return this.writers.map((writer) => ({ data: writer.first() }));
    }

    part(choice: number, part: GenerationPart): ChunkEvent[] {
        return this.writers[choice]!.part(part).map((data) => ({ data }));
    }

    end(usage: Usage): ChunkEvent[] {
        return this.includeUsage ? [{ data: this.writers[0]!.usage(usage) }] : [];
    }
}

/** Collects one choice's parts into its message of the non-streaming `chat.completion`. */
export class ChatMessageCollector {
    private reasoning = "";
    private content = "";
    private readonly toolCalls: WireToolCall[] = [];
    private readonly logprobs: WireChatLogprob[] = [];
    private finish: FinishPart | undefined;

    /** `index`: the choice this collector builds. */
    constructor(private readonly identity: ChatCompletionIdentity, private readonly index = 0) {}

    add(part: GenerationPart): void {
        switch (part.type) {
            case "logprobs":
                this.logprobs.push(toChatLogprob(part.token));
                break;
            case "reasoning-delta":
                this.reasoning += part.text;
                break;
            case "text-delta":
                this.content += part.text;
                break;
            case "tool-call":
                this.toolCalls.push(toWireToolCall(part));
                break;
            case "finish":
                this.finish = part;
                break;
        }
    }

    /** This choice of the `chat.completion`; `withLogprobs`: the request asked for them. */
    choice(withLogprobs: boolean): Record<string, unknown> {
        const { includeReasoning } = this.identity;
        const onlyToolCalls = this.toolCalls.length > 0 && this.content.trim() === "";
        const message: Record<string, unknown> = {
            role: "assistant",
            content: onlyToolCalls ? null : this.content,
            ...(includeReasoning ? { reasoning_content: this.reasoning === "" ? null : this.reasoning } : {}),
            ...(this.toolCalls.length > 0 ? { tool_calls: this.toolCalls } : {})
        };
        const finish = this.finish;
        if (finish === undefined) throw new Error("a chat choice was collected before its finish part");
        return {
            index: this.index, message, logprobs: withLogprobs ? chatLogprobs(this.logprobs) : null,
            finish_reason: chatFinishReason(finish),
            matched_stop: finish.matchedStop
        };
    }
}

/** The non-streaming `chat.completion`: its choices, and the usage of all of them. */
export function chatCompletion(identity: ChatCompletionIdentity, choices: Record<string, unknown>[], usage: Usage): Record<string, unknown> {
    const { id, created, model, weightVersion } = identity;
    return {
        id, object: "chat.completion", created, model, choices,
        usage: toWireUsage(usage, true),
        metadata: { weight_version: weightVersion }
    };
}

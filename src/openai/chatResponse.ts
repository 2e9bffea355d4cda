import type {
    ChatCompletion, ChatCompletionChunk, ChatCompletionMessage, ChatCompletionMessageFunctionToolCall
} from "openai/resources/chat/completions";
import type { FinishPart, GenerationPart, Usage } from "../core/index.js";
import type { Sent } from "../wire/sdkShape.js";
import { newId } from "../wire/ids.js";
import { chatLogprobs, toChatLogprob, type WireChatLogprob } from "./logprobs.js";
import { toWireUsage, type WireUsage } from "./usage.js";

export type ChatFinishReason = FinishPart["reason"] | "tool_calls";

/*
 * Chat's wire objects as Maple sends them, checked against the openai SDK's types. Maple's
 * additions: `reasoning_content` (vLLM's, SGLang's and DeepSeek's field for the thought),
 * `matched_stop` (SGLang's: the stop string, or the end-of-generation token's id) and
 * `metadata.weight_version` (SGLang's). The whole message has no `refusal` (Maple never refuses).
 */
interface MapleChoiceFields {
    matched_stop?: string | number | null;
}
type ChatChunkDelta = Sent<ChatCompletionChunk.Choice.Delta, never, { reasoning_content?: string }>;
export type ChatChunkChoice = Sent<ChatCompletionChunk.Choice, never, { delta: ChatChunkDelta } & MapleChoiceFields>;
export type ChatChunk = Sent<ChatCompletionChunk, never, { choices: ChatChunkChoice[]; usage?: WireUsage | null; metadata?: { weight_version: string } }>;
type SentToolCall = ChatCompletionMessageFunctionToolCall;
export type SentChatMessage = Sent<ChatCompletionMessage, "refusal", { reasoning_content?: string | null; tool_calls?: SentToolCall[] }>;
export type SentChatChoice = Sent<ChatCompletion.Choice, never, { message: SentChatMessage; matched_stop: string | number | null }>;
export type SentChatCompletion = Sent<ChatCompletion, never, { choices: SentChatChoice[]; usage: WireUsage; metadata: { weight_version: string } }>;

/** An SSE event's data, as the HTTP layer's stream writer takes it. */
export interface ChunkEvent {
    data: ChatChunk;
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

/** A turn that ended with tool calls is `tool_calls`; one cut by the token limit stays `length`. */
export function chatFinishReason(finish: FinishPart): ChatFinishReason {
    return finish.reason === "stop" && finish.toolCalls > 0 ? "tool_calls" : finish.reason;
}

/** Turns one choice's parts into OpenAI chat chunks. */
export class ChatChunkWriter {
    private toolCallCount = 0;
    /** The logprobs of tokens whose text no chunk carried yet: the next chunk carries them. */
    private logprobs: WireChatLogprob[] = [];

    /** `index`: the choice this writer streams (n > 1 interleaves the choices' chunks). */
    constructor(private readonly identity: ChatCompletionIdentity, private readonly index = 0) {}

    private chunk(choices: ChatChunkChoice[], extra: Pick<ChatChunk, "usage" | "metadata"> = {}): ChatChunk {
        const { id, created, model, systemFingerprint, includeUsage } = this.identity;
        return { id, object: "chat.completion.chunk", created, model, system_fingerprint: systemFingerprint, choices, ...(includeUsage ? { usage: null } : {}), ...extra };
    }

    /** A chunk of `choice`, carrying the logprobs not yet sent. */
    private choiceChunk(choice: ChatChunkChoice, extra?: Pick<ChatChunk, "metadata">): ChatChunk {
        if (this.logprobs.length > 0) {
            choice.logprobs = chatLogprobs(this.logprobs);
            this.logprobs = [];
        }
        return this.chunk([choice], extra);
    }

    private delta(delta: ChatChunkDelta): ChatChunk {
        return this.choiceChunk({ index: this.index, delta, logprobs: null, finish_reason: null });
    }

    /** The first chunk: the openai stream helper needs `role` before anything else. */
    first(): ChatChunk {
        return this.delta({ role: "assistant", content: "" });
    }

    /**
     * The chunks of one part (none for a logprobs part: its entry waits for the next chunk). A
     * tool call is one delta with index, id, type, name and arguments; it gets its wire id here,
     * once, so the streamed call and the folded message agree.
     */
    part(part: GenerationPart): ChatChunk[] {
        switch (part.type) {
            case "logprobs":
                this.logprobs.push(toChatLogprob(part.token));
                return [];
            case "reasoning-delta":
                return part.text === "" ? [] : [this.delta({ reasoning_content: part.text })];
            case "text-delta":
                return part.text === "" ? [] : [this.delta({ content: part.text })];
            case "tool-call": {
                const call = { index: this.toolCallCount, id: newId("call", "_"), type: "function" as const, function: { name: part.name, arguments: part.arguments } };
                this.toolCallCount += 1;
                return [this.delta({ tool_calls: [call] })];
            }
            case "finish":
                return [this.finish(part)];
        }
    }

    /** The choice's last chunk, carrying the logprobs no earlier chunk took. */
    private finish(finish: FinishPart): ChatChunk {
        return this.choiceChunk(
            { index: this.index, delta: {}, logprobs: null, finish_reason: chatFinishReason(finish), matched_stop: finish.matchedStop },
            { metadata: { weight_version: this.identity.weightVersion } }
        );
    }

    /** The usage chunk (`choices: []`), for the whole request. */
    usage(usage: Usage): ChatChunk {
        return this.chunk([], { usage: toWireUsage(usage, true) });
    }
}

/**
 * A streamed `chat.completion.chunk` response: the events of all its choices, then `[DONE]`.
 * The non-streaming `chat.completion` is these same events folded by `ChatCompletionBuilder`,
 * so the two cannot drift apart.
 */
export class ChatCompletionStream {
    readonly lastData = "[DONE]";
    private readonly writers: ChatChunkWriter[];

    /** `includeUsage`: `stream_options.include_usage`, a last chunk with the usage (a fold always wants it). */
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

/** One choice as its chunks built it so far. */
interface ChoiceFold {
    content: string;
    reasoning: string;
    toolCalls: SentToolCall[];
    logprobs: WireChatLogprob[];
    finishReason: SentChatChoice["finish_reason"] | undefined;
    matchedStop: string | number | null;
}

/**
 * Folds a chat stream's chunks into the `chat.completion` they describe (what the openai SDK's
 * `finalChatCompletion()` does on the client side), with the choice's whole-message rules: `content`
 * is null when the whole answer was tool calls; `reasoning_content` is null when there was none
 * (and absent when it is not sent); `logprobs` lists every token when they were asked for.
 */
export class ChatCompletionBuilder {
    private head: Pick<ChatChunk, "id" | "created" | "model" | "system_fingerprint"> | undefined;
    private readonly choices: ChoiceFold[] = [];
    private usage: WireUsage | undefined;
    private metadata: { weight_version: string } | undefined;

    /** What the chunks do not say: whether the request asked for logprobs, and whether reasoning is sent. */
    constructor(private readonly options: { withLogprobs: boolean; includeReasoning: boolean }) {}

    add(events: readonly ChunkEvent[]): void {
        for (const { data } of events) this.apply(data);
    }

    /** The whole `chat.completion`; call after every choice's finish chunk and the usage chunk. */
    build(): SentChatCompletion {
        const head = this.head;
        if (head === undefined || this.usage === undefined || this.metadata === undefined) throw new Error("ChatCompletionBuilder.build called before the stream's end");
        return {
            id: head.id, object: "chat.completion", created: head.created, model: head.model, system_fingerprint: head.system_fingerprint,
            choices: this.choices.map((choice, index) => this.choice(choice, index)),
            usage: this.usage,
            metadata: this.metadata
        };
    }

    private apply(chunk: ChatChunk): void {
        this.head ??= { id: chunk.id, created: chunk.created, model: chunk.model, system_fingerprint: chunk.system_fingerprint };
        if (chunk.usage) this.usage = chunk.usage;
        if (chunk.metadata !== undefined) this.metadata = chunk.metadata;
        for (const { index, delta, logprobs, finish_reason: finishReason, matched_stop: matchedStop } of chunk.choices) {
            const choice = this.choices[index] ??= { content: "", reasoning: "", toolCalls: [], logprobs: [], finishReason: undefined, matchedStop: null };
            if (delta.content) choice.content += delta.content;
            if (delta.reasoning_content !== undefined) choice.reasoning += delta.reasoning_content;
            for (const call of delta.tool_calls ?? []) {
                choice.toolCalls[call.index] = { id: call.id!, type: "function", function: { name: call.function!.name!, arguments: call.function!.arguments! } };
            }
            if (logprobs?.content) choice.logprobs.push(...logprobs.content);
            if (finishReason !== null) {
                choice.finishReason = finishReason;
                choice.matchedStop = matchedStop ?? null;
            }
        }
    }

    private choice(choice: ChoiceFold, index: number): SentChatChoice {
        if (choice.finishReason === undefined) throw new Error("a chat choice was folded before its finish chunk");
        const onlyToolCalls = choice.toolCalls.length > 0 && choice.content.trim() === "";
        const message: SentChatMessage = {
            role: "assistant",
            content: onlyToolCalls ? null : choice.content,
            ...(this.options.includeReasoning ? { reasoning_content: choice.reasoning === "" ? null : choice.reasoning } : {}),
            ...(choice.toolCalls.length > 0 ? { tool_calls: choice.toolCalls } : {})
        };
        return {
            index, message, logprobs: this.options.withLogprobs ? chatLogprobs(choice.logprobs) : null,
            finish_reason: choice.finishReason,
            matched_stop: choice.matchedStop
        };
    }
}

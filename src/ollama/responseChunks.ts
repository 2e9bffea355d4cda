import type { FinishPart, GenerationPart, TokenLogprobs } from "../core/index.js";
import { newId } from "../wire/ids.js";
import type { OllamaDurations } from "./timings.js";

/** A tool call as Ollama writes it (api.ToolCall): arguments as an object, an id, and its index among the turn's calls. */
export interface OllamaToolCall {
    id: string;
    function: { index: number; name: string; arguments: Record<string, unknown> };
}

export interface OllamaMessage {
    role: "assistant";
    content: string;
    thinking?: string;
    tool_calls?: OllamaToolCall[];
}

/** One generated token's logprob (api.Logprob). */
export interface OllamaLogprob {
    token: string;
    logprob: number;
    bytes: number[];
    top_logprobs?: { token: string; logprob: number; bytes: number[] }[];
}

/**
 * One object of an /api/chat (`message`) or /api/generate (`response`, `thinking`) answer: each
 * line of the NDJSON stream, and (folded) the whole `stream: false` answer. The last has `done:
 * true`, `done_reason` and the counts and durations (api.ChatResponse / api.GenerateResponse).
 */
export interface OllamaChunk extends Partial<OllamaDurations> {
    model: string;
    created_at: string;
    message?: OllamaMessage;
    response?: string;
    thinking?: string;
    done: boolean;
    done_reason?: "stop" | "length" | "load";
    prompt_eval_count?: number;
    eval_count?: number;
    logprobs?: OllamaLogprob[];
}

export interface ChunkIdentity {
    /** The model name as the request gave it (Ollama echoes it). */
    model: string;
    /** /api/chat's `message` or /api/generate's `response` and `thinking`. */
    api: "chat" | "generate";
}

/** The clock of the request: the final object's durations. */
export interface DurationSource {
    durations(): OllamaDurations;
}

/** The core's finish → Ollama's `done_reason`: "length" when the token limit or the context ran out, else "stop" (tool calls too, as Ollama). */
export function doneReason(finish: Pick<FinishPart, "reason">): "stop" | "length" {
    return finish.reason === "length" ? "length" : "stop";
}

function toLogprob(token: TokenLogprobs): OllamaLogprob {
    return {
        token: token.text, logprob: token.logprob, bytes: token.bytes,
        ...(token.top.length > 0 ? { top_logprobs: token.top.map((top) => ({ token: top.text, logprob: top.logprob, bytes: top.bytes })) } : {})
    };
}

/**
 * Turns the generation core's parts into Ollama's objects: one per reasoning or text delta, one
 * per tool call (whole, as the core gives it), and a last one with `done: true`. Logprobs ride on
 * the next object sent (a token's logprobs come before its text). Pure but for the clock: the
 * `stream: false` answer is these same objects folded by `OllamaChunkFolder`.
 */
export class OllamaChunkWriter {
    private pendingLogprobs: OllamaLogprob[] = [];
    private clockMs = 0;
    private createdAt = "";

    constructor(private readonly identity: ChunkIdentity, private readonly clock: DurationSource) {}

    part(part: GenerationPart): OllamaChunk[] {
        switch (part.type) {
            case "reasoning-delta":
                return [this.chunk(this.identity.api === "chat" ? { message: { role: "assistant", content: "", thinking: part.text } } : { response: "", thinking: part.text })];
            case "text-delta":
                return [this.chunk(this.identity.api === "chat" ? { message: { role: "assistant", content: part.text } } : { response: part.text })];
            case "tool-call": {
                const call: OllamaToolCall = {
                    id: newId("call", "_"),
                    function: { index: part.index, name: part.name, arguments: JSON.parse(part.arguments) as Record<string, unknown> }
                };
                return [this.chunk({ message: { role: "assistant", content: "", tool_calls: [call] } })];
            }
            case "logprobs":
                this.pendingLogprobs.push(toLogprob(part.token));
                return [];
            case "finish":
                return [this.chunk({
                    ...(this.identity.api === "chat" ? { message: { role: "assistant", content: "" } } : { response: "" }),
                    done: true,
                    done_reason: doneReason(part),
                    ...this.clock.durations(),
                    prompt_eval_count: part.usage.promptTokens,
                    eval_count: part.usage.completionTokens
                })];
        }
    }

    private chunk(fields: Partial<OllamaChunk>): OllamaChunk {
        const chunk: OllamaChunk = { model: this.identity.model, created_at: this.now(), done: false, ...fields };
        if (this.pendingLogprobs.length > 0) {
            chunk.logprobs = this.pendingLogprobs;
            this.pendingLogprobs = [];
        }
        return chunk;
    }

    /** Each object's `created_at`; formatted once per millisecond (it was a third of the writer's time per token). */
    private now(): string {
        const ms = Date.now();
        if (ms !== this.clockMs) {
            this.clockMs = ms;
            this.createdAt = new Date(ms).toISOString();
        }
        return this.createdAt;
    }
}

/**
 * Folds a stream's objects into the one `stream: false` answer, as Ollama's own server does
 * (writeChatResponse): texts concatenated, tool calls and logprobs gathered, the rest from the
 * last object.
 */
export class OllamaChunkFolder {
    private last: OllamaChunk | undefined;
    private content = "";
    private thinking = "";
    private readonly toolCalls: OllamaToolCall[] = [];
    private readonly logprobs: OllamaLogprob[] = [];

    add(chunks: readonly OllamaChunk[]): void {
        for (const chunk of chunks) {
            this.content += chunk.message?.content ?? chunk.response ?? "";
            this.thinking += chunk.message?.thinking ?? chunk.thinking ?? "";
            this.toolCalls.push(...chunk.message?.tool_calls ?? []);
            this.logprobs.push(...chunk.logprobs ?? []);
            this.last = chunk;
        }
    }

    /** The whole answer; call after the `done` object. */
    build(): OllamaChunk {
        const last = this.last;
        if (last === undefined) throw new Error("OllamaChunkFolder.build called before any object");
        const thinking = this.thinking === "" ? {} : { thinking: this.thinking };
        const folded: OllamaChunk = last.message !== undefined
            ? { ...last, message: { role: "assistant", content: this.content, ...thinking, ...(this.toolCalls.length > 0 ? { tool_calls: this.toolCalls } : {}) } }
            : { ...last, response: this.content, ...thinking };
        if (this.logprobs.length > 0) folded.logprobs = this.logprobs;
        return folded;
    }
}

/** Ollama's answer to a request with nothing to generate (no messages, an empty prompt): the model is loaded. */
export function loadedChunk(identity: ChunkIdentity): OllamaChunk {
    return {
        model: identity.model, created_at: new Date().toISOString(),
        ...(identity.api === "chat" ? { message: { role: "assistant" as const, content: "" } } : { response: "" }),
        done: true, done_reason: "load"
    };
}

import type { Completion, CompletionChoice } from "openai/resources/completions";
import type { FinishPart, GenerationPart, Usage } from "../core/index.js";
import type { Sent } from "../wire/sdkShape.js";
import { CompletionLogprobs, type WireCompletionLogprobs } from "./logprobs.js";
import { toWireUsage, type WireUsage } from "./usage.js";

/*
 * `/v1/completions`' wire objects as Maple sends them, checked against the openai SDK's types
 * (its stream yields `Completion`s too). Maple's additions: a streamed choice's `finish_reason`
 * is null until its last chunk, chunks carry `"usage": null` with include_usage (as OpenAI's
 * do), and the finishing choice has `matched_stop` (SGLang's).
 */
export type SentCompletionChoice = Sent<CompletionChoice, never, {
    logprobs: WireCompletionLogprobs | null;
    finish_reason: FinishPart["reason"] | null;
    matched_stop?: string | number | null;
}>;
export type SentCompletion = Sent<Completion, never, { choices: SentCompletionChoice[]; usage?: WireUsage | null }>;

/** An SSE event's data, as the HTTP layer's stream writer takes it. */
export interface CompletionEvent {
    data: SentCompletion;
}

export interface CompletionIdentity {
    id: string;
    created: number;
    model: string;
    /** OpenAI's `system_fingerprint`, on the response and every chunk. */
    systemFingerprint: string;
}

function completionObject(identity: CompletionIdentity, choices: SentCompletionChoice[], extra: Pick<SentCompletion, "usage"> = {}): SentCompletion {
    const { id, created, model, systemFingerprint } = identity;
    return { id, object: "text_completion", created, model, system_fingerprint: systemFingerprint, choices, ...extra };
}

/**
 * A streamed `/v1/completions` response: a chunk per piece of text (carrying the logprobs of the
 * tokens not yet sent: a token whose text is still held waits for the next chunk, its logprobs
 * with it), each choice's finish chunk, the usage chunk when asked for, then `[DONE]`. The
 * non-streaming response is these same chunks folded by `CompletionBuilder`.
 */
export class CompletionStream {
    readonly lastData = "[DONE]";
    private readonly logprobs: CompletionLogprobs[];

    /** `includeUsage`: `stream_options.include_usage`, a last chunk with the usage (a fold always wants it). */
    constructor(private readonly identity: CompletionIdentity, choices: number, private readonly includeUsage: boolean) {
        this.logprobs = Array.from({ length: choices }, () => new CompletionLogprobs());
    }

    start(): CompletionEvent[] {
        return [];
    }

    part(choice: number, part: GenerationPart): CompletionEvent[] {
        const logprobs = this.logprobs[choice]!;
        switch (part.type) {
            case "logprobs":
                logprobs.add(part.token);
                return [];
            case "text-delta":
                return [{ data: this.chunk([{ index: choice, text: part.text, logprobs: logprobs.take(), finish_reason: null }]) }];
            case "finish":
                return [{ data: this.chunk([{ index: choice, text: "", logprobs: logprobs.take(), finish_reason: part.reason, matched_stop: part.matchedStop }]) }];
            default:
                // A raw completion is never parsed: no reasoning or tool-call parts.
                return [];
        }
    }

    end(usage: Usage): CompletionEvent[] {
        return this.includeUsage ? [{ data: completionObject(this.identity, [], { usage: toWireUsage(usage, false) }) }] : [];
    }

    /** A choice's chunk; with include_usage it has `"usage": null`, as OpenAI's do (only the usage chunk has one). */
    private chunk(choices: SentCompletionChoice[]): SentCompletion {
        return completionObject(this.identity, choices, this.includeUsage ? { usage: null } : {});
    }
}

/** Folds a completions stream's chunks into the `text_completion` they describe: each choice's text and logprobs joined. */
export class CompletionBuilder {
    private head: Omit<SentCompletion, "choices" | "usage"> | undefined;
    private readonly choices: SentCompletionChoice[] = [];
    private usage: WireUsage | undefined;

    add(events: readonly CompletionEvent[]): void {
        for (const { data } of events) this.apply(data);
    }

    /** The whole `text_completion`; call after every choice's finish chunk and the usage chunk. */
    build(): SentCompletion {
        if (this.head === undefined || this.usage === undefined) throw new Error("CompletionBuilder.build called before the stream's end");
        for (const choice of this.choices) if (choice.finish_reason === null) throw new Error("a completion choice was folded before its finish chunk");
        return { ...this.head, choices: this.choices, usage: this.usage };
    }

    private apply(chunk: SentCompletion): void {
        const { choices, usage, ...head } = chunk;
        this.head ??= head;
        if (usage) this.usage = usage;
        for (const { index, text, logprobs, finish_reason: finishReason, matched_stop: matchedStop } of choices) {
            const choice = this.choices[index] ??= { index, text: "", logprobs: null, finish_reason: null };
            choice.text += text;
            if (logprobs !== null) choice.logprobs = choice.logprobs === null ? logprobs : joinLogprobs(choice.logprobs, logprobs);
            if (finishReason !== null) Object.assign(choice, { finish_reason: finishReason, matched_stop: matchedStop ?? null });
        }
    }
}

function joinLogprobs(first: WireCompletionLogprobs, then: WireCompletionLogprobs): WireCompletionLogprobs {
    return {
        tokens: [...first.tokens, ...then.tokens],
        token_logprobs: [...first.token_logprobs, ...then.token_logprobs],
        top_logprobs: [...first.top_logprobs, ...then.top_logprobs],
        text_offset: [...first.text_offset, ...then.text_offset]
    };
}

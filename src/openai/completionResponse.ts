import type { FinishPart, GenerationPart, Usage } from "../conversation/index.js";
import { CompletionLogprobs } from "./logprobs.js";
import { toWireUsage } from "./usage.js";

export interface CompletionIdentity {
    id: string;
    created: number;
    model: string;
}

function completionObject(identity: CompletionIdentity, choices: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
    const { id, created, model } = identity;
    return { id, object: "text_completion", created, model, choices, ...extra };
}

function finishChoice(index: number, text: string, logprobs: CompletionLogprobs, finish: FinishPart): Record<string, unknown> {
    return { index, text, logprobs: logprobs.take(), finish_reason: finish.reason, matched_stop: finish.matchedStop };
}

/**
 * A streamed `/v1/completions` response: a chunk per piece of text (carrying the logprobs of the
 * tokens not yet sent: a token whose text is still held waits for the next chunk, its logprobs
 * with it), each choice's finish chunk, the usage chunk when asked for, then `[DONE]`.
 */
export class CompletionStream {
    readonly lastData = "[DONE]";
    private readonly logprobs: CompletionLogprobs[];

    constructor(private readonly identity: CompletionIdentity, choices: number, private readonly includeUsage: boolean) {
        this.logprobs = Array.from({ length: choices }, () => new CompletionLogprobs());
    }

    start(): { data: unknown }[] {
        return [];
    }

    part(choice: number, part: GenerationPart): { data: unknown }[] {
        const logprobs = this.logprobs[choice]!;
        switch (part.type) {
            case "logprobs":
                logprobs.add(part.token);
                return [];
            case "text-delta":
                return [{ data: completionObject(this.identity, [{ index: choice, text: part.text, logprobs: logprobs.take(), finish_reason: null }]) }];
            case "finish":
                return [{ data: completionObject(this.identity, [finishChoice(choice, "", logprobs, part)]) }];
            default:
                // A raw completion is never parsed: no reasoning or tool-call parts.
                return [];
        }
    }

    end(usage: Usage): { data: unknown }[] {
        return this.includeUsage ? [{ data: completionObject(this.identity, [], { usage: toWireUsage(usage, false) }) }] : [];
    }
}

/** Collects the choices of a non-streaming `/v1/completions` response. */
export class CompletionCollector {
    private readonly texts: string[];
    private readonly logprobs: CompletionLogprobs[];
    private readonly finishes: (FinishPart | undefined)[];

    constructor(private readonly identity: CompletionIdentity, choices: number) {
        this.texts = Array.from({ length: choices }, () => "");
        this.logprobs = Array.from({ length: choices }, () => new CompletionLogprobs());
        this.finishes = Array.from({ length: choices }, () => undefined);
    }

    add(choice: number, part: GenerationPart): void {
        if (part.type === "text-delta") this.texts[choice] += part.text;
        else if (part.type === "logprobs") this.logprobs[choice]!.add(part.token);
        else if (part.type === "finish") this.finishes[choice] = part;
    }

    /** The `text_completion` with every choice and the request's usage. */
    response(usage: Usage): Record<string, unknown> {
        const choices = this.finishes.map((finish, index) => {
            if (finish === undefined) throw new Error("a completion choice was collected before its finish part");
            return finishChoice(index, this.texts[index]!, this.logprobs[index]!, finish);
        });
        return completionObject(this.identity, choices, { usage: toWireUsage(usage, false) });
    }
}

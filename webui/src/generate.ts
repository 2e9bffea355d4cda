// One assistant reply: stream it, time it, and wait out a busy server (503 + Retry-After) before
// trying again. Everything the page shows while it runs comes through `onUpdate`.
import { ApiError, streamChatCompletion, type ApiFailure } from "./api.js";
import { newId, type AssistantTurn } from "./conversations.js";

export type Phase = "waiting" | "thinking" | "answering" | "retrying";

export interface Progress {
    turn: AssistantTurn;
    phase: Phase;
    /** When the model started thinking (performance.now()), for a live duration. */
    thinkingSince?: number;
    /** While retrying: seconds until the next attempt. */
    retryInSeconds?: number;
    /** While retrying: why. */
    retryReason?: string;
}

export interface GenerateOptions {
    body: Record<string, unknown>;
    apiKey: string;
    signal: AbortSignal;
    onUpdate(progress: Progress): void;
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
        const timer = setTimeout(done, ms);
        signal.addEventListener("abort", done, { once: true });
        function done(): void {
            clearTimeout(timer);
            signal.removeEventListener("abort", done);
            resolve();
        }
    });
}

/** The failure's message as the page shows it under the reply. */
export function describeFailure(failure: ApiFailure): string {
    switch (failure.kind) {
        case "unauthorized": return "This server needs an API key (401). Enter it below; it stays in this browser.";
        case "connection": return failure.message;
        case "busy": return `The server is busy: ${failure.message}`;
        case "server": return failure.status === undefined ? failure.message : `The server answered ${failure.status}: ${failure.message}`;
    }
}

/** Resolves with the finished turn: done, stopped (the signal aborted) or error. Never rejects. */
export async function generateReply({ body, apiKey, signal, onUpdate }: GenerateOptions): Promise<AssistantTurn> {
    const turn: AssistantTurn = { role: "assistant", id: newId(), content: "", reasoning: "", status: "streaming" };
    for (;;) {
        const sentAt = performance.now();
        let firstTokenAt: number | undefined;
        let thinkingSince: number | undefined;
        let phase: Phase = "waiting";
        const update = (): void => onUpdate({ turn: { ...turn }, phase, ...(thinkingSince !== undefined ? { thinkingSince } : {}) });
        const firstToken = (): void => {
            firstTokenAt ??= performance.now();
        };
        update();
        try {
            const result = await streamChatCompletion(body, apiKey, signal, {
                onReasoning(text) {
                    firstToken();
                    thinkingSince ??= performance.now();
                    phase = "thinking";
                    turn.reasoning += text;
                    update();
                },
                onContent(text) {
                    firstToken();
                    if (thinkingSince !== undefined && turn.reasoningMs === undefined) turn.reasoningMs = performance.now() - thinkingSince;
                    phase = "answering";
                    turn.content += text;
                    update();
                }
            });
            const endedAt = performance.now();
            if (thinkingSince !== undefined && turn.reasoningMs === undefined) turn.reasoningMs = endedAt - thinkingSince;
            turn.status = "done";
            turn.finishReason = result.finishReason;
            if (result.usage !== undefined && firstTokenAt !== undefined) {
                const tokens = result.usage.completion_tokens;
                const decodeSeconds = (endedAt - firstTokenAt) / 1000;
                turn.stats = {
                    promptTokens: result.usage.prompt_tokens,
                    completionTokens: tokens,
                    ...(result.usage.completion_tokens_details?.reasoning_tokens !== undefined ? { reasoningTokens: result.usage.completion_tokens_details.reasoning_tokens } : {}),
                    timeToFirstTokenMs: firstTokenAt - sentAt,
                    // The first token's time is in TTFT; the rate is over the tokens after it.
                    ...(tokens > 1 && decodeSeconds > 0 ? { tokensPerSecond: (tokens - 1) / decodeSeconds } : {})
                };
            }
            return turn;
        } catch (error) {
            if (thinkingSince !== undefined && turn.reasoningMs === undefined) turn.reasoningMs = performance.now() - thinkingSince;
            if (signal.aborted) return { ...turn, status: "stopped" };
            const failure: ApiFailure = error instanceof ApiError ? error.failure : { kind: "server", message: (error as Error).message };
            const nothingYet = turn.content === "" && turn.reasoning === "";
            if (failure.kind !== "busy" || !nothingYet) return { ...turn, status: "error", error: describeFailure(failure), errorKind: failure.kind };
            for (let left = failure.retryAfterSeconds; left > 0 && !signal.aborted; left--) {
                onUpdate({ turn: { ...turn }, phase: "retrying", retryInSeconds: left, retryReason: failure.message });
                await abortableSleep(1000, signal);
            }
            if (signal.aborted) return { ...turn, status: "stopped" };
        }
    }
}

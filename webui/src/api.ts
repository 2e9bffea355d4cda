// Maple's public API, as any other client sees it: /health, /v1/models and streaming
// /v1/chat/completions. Paths are relative to the page, so the chat also works behind a proxy
// that mounts Maple under a prefix.
import { EventSourceParserStream } from "eventsource-parser/stream";

/** Why a request failed, in the words the page shows. */
export type ApiFailure =
    | { kind: "unauthorized"; message: string }
    /** 503: queue full, model loading or shutting down; the server says when to try again. */
    | { kind: "busy"; message: string; retryAfterSeconds: number }
    /** The server could not be reached, or the stream ended before the answer did. */
    | { kind: "connection"; message: string }
    | { kind: "server"; message: string; status?: number };

export class ApiError extends Error {
    constructor(readonly failure: ApiFailure) {
        super(failure.message);
        this.name = "ApiError";
    }
}

export interface Health {
    status: "ok" | "loading" | "error";
    model: string;
    stage?: string;
    progress?: number | null;
    context_size?: number;
    active?: number;
    synthetic?: boolean;
}

export interface ModelInfo {
    id: string;
    max_model_len?: number;
    /** "chat" or "embedding"; null before the server has read the model's file. */
    purpose?: string | null;
    loaded?: boolean;
}

export interface Usage {
    prompt_tokens: number;
    completion_tokens: number;
    completion_tokens_details?: { reasoning_tokens?: number };
}

export interface StreamResult {
    finishReason: string | null;
    usage: Usage | undefined;
}

export interface StreamCallbacks {
    onReasoning(text: string): void;
    onContent(text: string): void;
}

interface WireChunk {
    choices?: { delta?: { content?: string | null; reasoning_content?: string | null }; finish_reason?: string | null }[];
    usage?: Usage | null;
    error?: { message?: string };
}

function headers(apiKey: string, json = false): HeadersInit {
    return {
        ...(apiKey !== "" ? { authorization: `Bearer ${apiKey}` } : {}),
        ...(json ? { "content-type": "application/json" } : {})
    };
}

async function errorMessage(response: Response): Promise<string> {
    try {
        const body = await response.json() as { error?: { message?: string } };
        if (typeof body.error?.message === "string") return body.error.message;
    } catch {
        // Not Maple's JSON error shape (a proxy's page, say): the status line says enough.
    }
    return `${response.status} ${response.statusText}`.trim();
}

/** Maps a non-2xx response onto what the page does about it. */
async function failureOf(response: Response): Promise<ApiFailure> {
    const message = await errorMessage(response);
    if (response.status === 401) return { kind: "unauthorized", message };
    if (response.status === 503) {
        const retryAfter = Number(response.headers.get("retry-after"));
        return { kind: "busy", message, retryAfterSeconds: Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter, 300) : 5 };
    }
    return { kind: "server", message, status: response.status };
}

async function request(path: string, init: RequestInit): Promise<Response> {
    try {
        return await fetch(path, init);
    } catch (error) {
        if (init.signal?.aborted) throw error;
        throw new ApiError({ kind: "connection", message: "Cannot reach the server: is Maple still running?" });
    }
}

/** /health is open even when an API key is set: the page shows the model and its state from it. */
export async function fetchHealth(signal?: AbortSignal): Promise<Health> {
    const response = await request("health", { signal });
    return await response.json() as Health;
}

export async function fetchModels(apiKey: string, signal?: AbortSignal): Promise<ModelInfo[]> {
    const response = await request("v1/models", { headers: headers(apiKey), signal });
    if (!response.ok) throw new ApiError(await failureOf(response));
    return (await response.json() as { data: ModelInfo[] }).data;
}

/**
 * POSTs a streaming chat completion and feeds its reasoning and answer text to `callbacks` as they
 * arrive. Aborting `signal` closes the connection, which makes Maple cancel the generation.
 */
export async function streamChatCompletion(body: Record<string, unknown>, apiKey: string, signal: AbortSignal,
    callbacks: StreamCallbacks): Promise<StreamResult> {
    const response = await request("v1/chat/completions", { method: "POST", headers: headers(apiKey, true), body: JSON.stringify(body), signal });
    if (!response.ok) throw new ApiError(await failureOf(response));
    if (response.body === null) throw new ApiError({ kind: "server", message: "The server sent no stream." });

    const events = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
    const result: StreamResult = { finishReason: null, usage: undefined };
    try {
        for (;;) {
            const { done, value } = await events.read();
            if (done) break;
            if (value.data === "[DONE]") return result;
            const chunk = JSON.parse(value.data) as WireChunk;
            if (chunk.error !== undefined) throw new ApiError({ kind: "server", message: chunk.error.message ?? "The generation failed." });
            if (chunk.usage) result.usage = chunk.usage;
            for (const choice of chunk.choices ?? []) {
                if (choice.delta?.reasoning_content) callbacks.onReasoning(choice.delta.reasoning_content);
                if (choice.delta?.content) callbacks.onContent(choice.delta.content);
                if (choice.finish_reason) result.finishReason = choice.finish_reason;
            }
        }
    } catch (error) {
        if (signal.aborted || error instanceof ApiError) throw error;
        throw new ApiError({ kind: "connection", message: "The connection dropped before the answer finished." });
    } finally {
        events.releaseLock();
    }
    if (signal.aborted) throw new DOMException("Aborted", "AbortError");
    throw new ApiError({ kind: "connection", message: "The connection dropped before the answer finished." });
}

import type { ChatMessage } from "../chatFormat/types.js";

/** One stored response: what GET returns, what `previous_response_id` continues, and its input items. */
export interface StoredResponse {
    id: string;
    /** The response object as the client saw it last (completed, incomplete, failed or cancelled). */
    response: Record<string, unknown>;
    /** The request's input items in wire form, for GET /v1/responses/{id}/input_items (previous responses' not included). */
    inputItems: Record<string, unknown>[];
    /**
     * The conversation this response continues from and answered, without `instructions` (which,
     * as OpenAI's, do not carry over to a continuation): earlier turns, this request's input, and
     * this response's output as an assistant turn.
     */
    conversation: ChatMessage[];
}

export interface ResponseStoreLimits {
    /** Responses kept at most; 0 keeps none. */
    maxCount: number;
    /** Sum of the stored responses' sizes (their JSON length) kept at most. */
    maxBytes: number;
    ttlMs: number;
}

/** What /health says of the store: `memory` (this process), or a shared store's connection. */
export type ResponseStoreState = "memory" | "ready" | "connecting" | "unreachable";

/**
 * Where `store: true` responses live: this process's memory (the default), or a store every
 * replica shares (Redis). Every method of a shared store rejects with StoreUnavailableError when
 * the store cannot answer in time; `put` resolves only once the store has confirmed the write, so
 * nothing is reported stored that was not.
 */
export interface ResponseStore {
    readonly state: ResponseStoreState;
    /** Throws StoreUnavailableError when the store is known to be down, before any work is done for a request that needs it. */
    requireAvailable(): void;
    /** Stores or replaces a response (a cancelled one is stored again with its new status). */
    put(stored: StoredResponse): Promise<void>;
    get(id: string): Promise<StoredResponse | undefined>;
    /** An output item of a stored response, by its id (`rs_…`, `msg_…`, `fc_…`), for `item_reference` inputs. */
    item(id: string): Promise<Record<string, unknown> | undefined>;
    delete(id: string): Promise<boolean>;
    /**
     * Asks the replica that runs response `id` to cancel it, and resolves with the response as it
     * cancelled it; undefined when no replica runs it (a memory store: never another replica).
     */
    cancelElsewhere(id: string): Promise<Record<string, unknown> | undefined>;
    /** How this replica answers another's cancel: the cancelled response, or undefined when it does not run `id`. */
    onCancelRequest(handler: (id: string) => Record<string, unknown> | undefined): void;
    close(): Promise<void>;
}

/** UTF-16 length of the JSON: a cheap, stable stand-in for the memory a response holds (both stores count it so). */
export function storedSize(json: string): number {
    return json.length;
}

/** The output items of a stored response, which `item_reference` inputs may name. */
export function outputItems(stored: StoredResponse): Record<string, unknown>[] {
    const output = stored.response["output"];
    return Array.isArray(output) ? output as Record<string, unknown>[] : [];
}

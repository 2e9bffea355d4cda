import type { ChatMessage } from "../chat/types.js";

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

interface Entry {
    stored: StoredResponse;
    bytes: number;
    expiresAt: number;
}

/**
 * A bounded in-memory store of responses (`store: true`): a count cap, a byte cap and a TTL, the
 * oldest dropped first when a cap is reached. It also indexes the output items by id, for the
 * `item_reference` inputs the AI SDK sends on its next step. Lost on restart, as documented.
 */
export class ResponseStore {
    /** Insertion order is age order: the first key is the oldest. */
    private readonly entries = new Map<string, Entry>();
    private readonly items = new Map<string, { responseId: string; item: Record<string, unknown> }>();
    private bytes = 0;

    constructor(private readonly limits: ResponseStoreLimits, private readonly now: () => number = Date.now) {}

    get size(): number {
        this.expire();
        return this.entries.size;
    }

    /** Stores or replaces a response (a cancelled one is stored again with its new status). */
    put(stored: StoredResponse): void {
        this.remove(stored.id);
        if (this.limits.maxCount === 0) return;
        const bytes = sizeOf(stored);
        if (bytes > this.limits.maxBytes) return;
        this.expire();
        while (this.entries.size >= this.limits.maxCount || this.bytes + bytes > this.limits.maxBytes) {
            const oldest = this.entries.keys().next().value;
            if (oldest === undefined) break;
            this.remove(oldest);
        }
        this.entries.set(stored.id, { stored, bytes, expiresAt: this.now() + this.limits.ttlMs });
        this.bytes += bytes;
        for (const item of outputItems(stored)) {
            if (typeof item["id"] === "string") this.items.set(item["id"], { responseId: stored.id, item });
        }
    }

    get(id: string): StoredResponse | undefined {
        this.expire();
        return this.entries.get(id)?.stored;
    }

    /** An output item of a stored response, by its id (`rs_…`, `msg_…`, `fc_…`). */
    item(id: string): Record<string, unknown> | undefined {
        this.expire();
        return this.items.get(id)?.item;
    }

    delete(id: string): boolean {
        this.expire();
        return this.remove(id);
    }

    private remove(id: string): boolean {
        const entry = this.entries.get(id);
        if (entry === undefined) return false;
        this.entries.delete(id);
        this.bytes -= entry.bytes;
        for (const item of outputItems(entry.stored)) {
            const itemId = item["id"];
            if (typeof itemId === "string" && this.items.get(itemId)?.responseId === id) this.items.delete(itemId);
        }
        return true;
    }

    /** Entries expire in insertion order (one TTL for all), so only the oldest need checking. */
    private expire(): void {
        const now = this.now();
        for (const [id, entry] of this.entries) {
            if (entry.expiresAt > now) break;
            this.remove(id);
        }
    }
}

function outputItems(stored: StoredResponse): Record<string, unknown>[] {
    const output = stored.response["output"];
    return Array.isArray(output) ? output as Record<string, unknown>[] : [];
}

/** UTF-16 length of the JSON: a cheap, stable stand-in for the memory a response holds. */
function sizeOf(stored: StoredResponse): number {
    return JSON.stringify(stored).length;
}

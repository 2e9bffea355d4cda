import { outputItems, storedSize, type ResponseStore, type ResponseStoreLimits, type StoredResponse } from "./responseStore.js";

interface Entry {
    stored: StoredResponse;
    bytes: number;
    expiresAt: number;
}

/**
 * A bounded in-memory store of responses (`store: true`, MAPLE_RESPONSES_STORE=memory): a count
 * cap, a byte cap and a TTL, the oldest dropped first when a cap is reached. It also indexes the
 * output items by id, for the `item_reference` inputs the AI SDK sends on its next step. Lost on
 * restart and seen by this replica only, as documented.
 */
export class MemoryResponseStore implements ResponseStore {
    readonly state = "memory";
    /** Insertion order is age order: the first key is the oldest. */
    private readonly entries = new Map<string, Entry>();
    private readonly items = new Map<string, { responseId: string; item: Record<string, unknown> }>();
    private bytes = 0;

    constructor(private readonly limits: ResponseStoreLimits, private readonly now: () => number = Date.now) {}

    get size(): number {
        this.expire();
        return this.entries.size;
    }

    requireAvailable(): void {
        // Memory is always there.
    }

    /** No other replica shares this store: a response runs here or nowhere it can be reached. */
    async cancelElsewhere(): Promise<undefined> {
        return undefined;
    }

    onCancelRequest(): void {
        // Nobody else asks.
    }

    async close(): Promise<void> {
        // Nothing to release.
    }

    async put(stored: StoredResponse): Promise<void> {
        this.remove(stored.id);
        if (this.limits.maxCount === 0) return;
        const bytes = storedSize(JSON.stringify(stored));
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

    async get(id: string): Promise<StoredResponse | undefined> {
        this.expire();
        return this.entries.get(id)?.stored;
    }

    async item(id: string): Promise<Record<string, unknown> | undefined> {
        this.expire();
        return this.items.get(id)?.item;
    }

    async delete(id: string): Promise<boolean> {
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

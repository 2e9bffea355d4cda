// Conversations live in this browser only (IndexedDB), one record each; export/import moves them as JSON.
import { openDB, type DBSchema, type IDBPDatabase } from "idb";

export interface Stats {
    promptTokens: number;
    completionTokens: number;
    reasoningTokens?: number;
    /** From sending the request to the first streamed token. */
    timeToFirstTokenMs: number;
    /** Decoding speed after the first token; absent when too few tokens came to tell. */
    tokensPerSecond?: number;
}

export interface UserTurn {
    role: "user";
    id: string;
    content: string;
}

export interface AssistantTurn {
    role: "assistant";
    id: string;
    content: string;
    reasoning: string;
    /** How long the model thought (first reasoning token to first answer token). */
    reasoningMs?: number;
    status: "streaming" | "done" | "stopped" | "error";
    error?: string;
    /** What kind of failure `error` is: the page offers the API key field for "unauthorized". */
    errorKind?: "unauthorized" | "busy" | "connection" | "server";
    finishReason?: string | null;
    stats?: Stats;
}

export type Turn = UserTurn | AssistantTurn;

export interface Conversation {
    id: string;
    title: string;
    createdAt: number;
    updatedAt: number;
    turns: Turn[];
}

interface ChatDb extends DBSchema {
    conversations: { key: string; value: Conversation };
}

export const exportFormat = "maple-webui-conversations";

let database: Promise<IDBPDatabase<ChatDb>> | undefined;

function db(): Promise<IDBPDatabase<ChatDb>> {
    database ??= openDB<ChatDb>("maple-webui", 1, {
        upgrade(upgrading) {
            upgrading.createObjectStore("conversations", { keyPath: "id" });
        }
    });
    return database;
}

export function newId(): string {
    return crypto.randomUUID();
}

export function titleFrom(text: string): string {
    const line = text.trim().split("\n")[0] ?? "";
    return line.length > 60 ? `${line.slice(0, 59)}…` : line || "New chat";
}

/** Newest first. */
export async function listConversations(): Promise<Conversation[]> {
    const all = await (await db()).getAll("conversations");
    return all.sort((a, b) => b.updatedAt - a.updatedAt);
}

export async function saveConversation(conversation: Conversation): Promise<void> {
    await (await db()).put("conversations", conversation);
}

export async function deleteConversation(id: string): Promise<void> {
    await (await db()).delete("conversations", id);
}

export function exportJson(conversations: Conversation[]): string {
    return JSON.stringify({ format: exportFormat, version: 1, exportedAt: new Date().toISOString(), conversations }, null, 2);
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

function readTurn(value: unknown): Turn | undefined {
    if (!isRecord(value) || typeof value.content !== "string") return undefined;
    const id = typeof value.id === "string" ? value.id : newId();
    if (value.role === "user") return { role: "user", id, content: value.content };
    if (value.role !== "assistant") return undefined;
    const status = value.status === "stopped" || value.status === "error" ? value.status : "done";
    return {
        role: "assistant", id, content: value.content, status,
        reasoning: typeof value.reasoning === "string" ? value.reasoning : "",
        ...(typeof value.reasoningMs === "number" ? { reasoningMs: value.reasoningMs } : {}),
        ...(typeof value.error === "string" ? { error: value.error } : {}),
        ...(isRecord(value.stats) && typeof value.stats.completionTokens === "number" ? { stats: value.stats as unknown as Stats } : {})
    };
}

/**
 * Reads an export (or a bare list of conversations) back; turns it cannot read are dropped and
 * anything else that is not a conversation throws with a message for the page.
 */
export function parseImport(text: string): Conversation[] {
    let parsed: unknown;
    try {
        parsed = JSON.parse(text);
    } catch {
        throw new Error("That file is not JSON.");
    }
    const list = isRecord(parsed) && Array.isArray(parsed.conversations) ? parsed.conversations : parsed;
    if (!Array.isArray(list)) throw new Error("That file holds no conversations.");
    return list.filter(isRecord).filter((item) => Array.isArray(item.turns)).map((item) => {
        const turns = (item.turns as unknown[]).map(readTurn).filter((turn): turn is Turn => turn !== undefined);
        const now = Date.now();
        return {
            id: typeof item.id === "string" ? item.id : newId(),
            title: typeof item.title === "string" && item.title.trim() !== "" ? item.title : titleFrom(turns[0]?.content ?? ""),
            createdAt: typeof item.createdAt === "number" ? item.createdAt : now,
            updatedAt: typeof item.updatedAt === "number" ? item.updatedAt : now,
            turns
        };
    });
}

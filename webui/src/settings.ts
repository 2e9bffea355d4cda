// What the user chooses for every request, kept in this browser (localStorage), and how it becomes
// a chat completion request.
import type { Turn } from "./conversations.js";

export interface ChatSettings {
    systemPrompt: string;
    /** Blank: the server's default. */
    temperature: string;
    topP: string;
    maxTokens: string;
    thinking: boolean;
    /** A JSON object merged last into every request body (any field, e.g. `grammar`). */
    extraFields: string;
}

export type Theme = "system" | "light" | "dark";

const settingsKey = "maple.settings";
const apiKeyKey = "maple.apiKey";
const themeKey = "maple.theme";
const currentKey = "maple.currentConversation";

export const defaultSettings: ChatSettings = { systemPrompt: "", temperature: "", topP: "", maxTokens: "", thinking: true, extraFields: "" };

function read(key: string): string | null {
    try {
        return localStorage.getItem(key);
    } catch {
        return null;
    }
}

function write(key: string, value: string | null): void {
    try {
        if (value === null) localStorage.removeItem(key);
        else localStorage.setItem(key, value);
    } catch {
        // Storage can be full or disabled; the setting then lasts until the page closes.
    }
}

export function loadSettings(): ChatSettings {
    try {
        return { ...defaultSettings, ...JSON.parse(read(settingsKey) ?? "{}") as Partial<ChatSettings> };
    } catch {
        return defaultSettings;
    }
}

export const saveSettings = (settings: ChatSettings): void => write(settingsKey, JSON.stringify(settings));
export const loadApiKey = (): string => read(apiKeyKey) ?? "";
export const saveApiKey = (key: string): void => write(apiKeyKey, key.trim() === "" ? null : key.trim());
export const loadTheme = (): Theme => (read(themeKey) as Theme | null) ?? "system";
export const saveTheme = (theme: Theme): void => write(themeKey, theme === "system" ? null : theme);
export const loadCurrentConversation = (): string | null => read(currentKey);
export const saveCurrentConversation = (id: string | null): void => write(currentKey, id);

/** The extra-fields box as an object, or the reason it is not one. */
export function parseExtraFields(text: string): { fields: Record<string, unknown> } | { error: string } {
    if (text.trim() === "") return { fields: {} };
    try {
        const value = JSON.parse(text) as unknown;
        if (typeof value !== "object" || value === null || Array.isArray(value)) return { error: "Extra request fields must be a JSON object, like {\"seed\": 1}." };
        return { fields: value as Record<string, unknown> };
    } catch (error) {
        return { error: `Extra request fields are not valid JSON: ${(error as Error).message}` };
    }
}

/** A number field: blank or invalid leaves the server's default. */
function numberField(text: string): number | undefined {
    const value = Number(text);
    return text.trim() === "" || !Number.isFinite(value) ? undefined : value;
}

/**
 * The request body: the conversation's text (earlier reasoning is not sent back, as OpenAI's
 * clients do), the settings, then the extra fields, which win over everything else.
 */
export function chatRequestBody(turns: Turn[], settings: ChatSettings, model: string | undefined, extraFields: Record<string, unknown>): Record<string, unknown> {
    const messages = [
        ...(settings.systemPrompt.trim() !== "" ? [{ role: "system", content: settings.systemPrompt }] : []),
        ...turns.map((turn) => ({ role: turn.role, content: turn.content }))
    ];
    const temperature = numberField(settings.temperature);
    const topP = numberField(settings.topP);
    const maxTokens = numberField(settings.maxTokens);
    return {
        ...(model !== undefined ? { model } : {}),
        messages,
        stream: true,
        stream_options: { include_usage: true },
        ...(temperature !== undefined ? { temperature } : {}),
        ...(topP !== undefined ? { top_p: topP } : {}),
        ...(maxTokens !== undefined ? { max_tokens: Math.round(maxTokens) } : {}),
        // Maple's one reasoning switch (src/wire/reasoning.ts), which each model's chat format turns
        // into its template's own variable: Qwen3's enable_thinking, DeepSeek V3.1's thinking,
        // gpt-oss's reasoning_effort (which has no off: none is its lowest, low).
        reasoning_effort: settings.thinking ? "medium" : "none",
        ...extraFields
    };
}

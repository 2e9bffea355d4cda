import type { JSX } from "preact";
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { fetchHealth, fetchModels, type Health } from "./api.js";
import { Composer } from "./components/Composer.js";
import { Icon, type IconName } from "./components/icons.js";
import { SettingsDialog } from "./components/SettingsDialog.js";
import { Sidebar } from "./components/Sidebar.js";
import { AssistantTurnView, UserTurnView } from "./components/TurnView.js";
import {
    deleteConversation, exportJson, listConversations, newId, parseImport, saveConversation, titleFrom,
    type Conversation, type Turn
} from "./conversations.js";
import { generateReply, type Progress } from "./generate.js";
import {
    chatRequestBody, loadApiKey, loadCurrentConversation, loadSettings, loadTheme, parseExtraFields, saveApiKey,
    saveCurrentConversation, saveSettings, saveTheme, type ChatSettings, type Theme
} from "./settings.js";

interface ServerInfo {
    health?: Health;
    modelId?: string;
    contextSize?: number;
    /** /health could not be reached. */
    offline?: boolean;
}

interface Live extends Progress {
    conversationId: string;
}

const nextTheme: Record<Theme, Theme> = { system: "light", light: "dark", dark: "system" };
const themeIcon: Record<Theme, IconName> = { system: "monitor", light: "sun", dark: "moon" };

function applyTheme(theme: Theme): void {
    if (theme === "system") delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = theme;
}

function serverLine(info: ServerInfo): string {
    if (info.offline) return "server unreachable";
    const health = info.health;
    if (health === undefined) return "connecting…";
    if (health.status === "loading") return `loading ${health.model}${typeof health.progress === "number" ? ` ${Math.round(health.progress * 100)}%` : "…"}`;
    if (health.status === "error") return "the model failed to load";
    const context = info.contextSize ?? health.context_size;
    return `${info.modelId ?? health.model}${context !== undefined ? ` · ${context.toLocaleString("en")} ctx` : ""}${health.synthetic ? " · synthetic" : ""}`;
}

export function App(): JSX.Element {
    const [conversations, setConversations] = useState<Conversation[]>([]);
    const [currentId, setCurrentId] = useState<string | null>(loadCurrentConversation());
    const [live, setLive] = useState<Live | null>(null);
    const [settings, setSettings] = useState<ChatSettings>(loadSettings);
    const [apiKey, setApiKey] = useState(loadApiKey);
    const [theme, setTheme] = useState<Theme>(loadTheme);
    const [server, setServer] = useState<ServerInfo>({});
    const [sidebarOpen, setSidebarOpen] = useState(false);
    const [settingsOpen, setSettingsOpen] = useState(false);
    const [notice, setNotice] = useState<string | null>(null);
    const controller = useRef<AbortController | null>(null);
    const conversationsRef = useRef(conversations);
    conversationsRef.current = conversations;
    const messages = useRef<HTMLDivElement>(null);
    const stickToBottom = useRef(true);

    useEffect(() => applyTheme(theme), [theme]);
    useEffect(() => saveCurrentConversation(currentId), [currentId]);
    useEffect(() => {
        void listConversations().then(setConversations, (error: Error) => setNotice(`Cannot open this browser's chat storage: ${error.message}`));
    }, []);

    // The model and its context size; while the model loads, ask again until it is ready.
    useEffect(() => {
        let stopped = false;
        let timer: ReturnType<typeof setTimeout> | undefined;
        const poll = async (): Promise<void> => {
            try {
                const health = await fetchHealth();
                if (stopped) return;
                setServer((info) => ({ ...info, health, offline: false }));
                if (health.status === "loading") timer = setTimeout(() => void poll(), 2000);
            } catch {
                if (stopped) return;
                setServer((info) => ({ ...info, offline: true }));
                timer = setTimeout(() => void poll(), 5000);
            }
        };
        void poll();
        return () => {
            stopped = true;
            clearTimeout(timer);
        };
    }, []);
    const healthStatus = server.health?.status;
    useEffect(() => {
        if (healthStatus !== "ok") return;
        // /v1/models needs the key when the server has one; /health already named the model.
        fetchModels(apiKey).then(([model]) => {
            if (model !== undefined) setServer((info) => ({ ...info, modelId: model.id, contextSize: model.max_model_len ?? info.contextSize }));
        }, () => undefined);
    }, [healthStatus, apiKey]);

    const current = conversations.find((conversation) => conversation.id === currentId);
    const liveHere = live !== null && live.conversationId === currentId ? live : undefined;

    // Follow a streaming answer, unless the reader scrolled up to read.
    useLayoutEffect(() => {
        const element = messages.current;
        if (element !== null && stickToBottom.current) element.scrollTop = element.scrollHeight;
    });

    const store = useCallback((conversation: Conversation): void => {
        setConversations((list) => [conversation, ...list.filter((item) => item.id !== conversation.id)]);
        saveConversation(conversation).catch((error: Error) => setNotice(`Could not save the chat: ${error.message}`));
    }, []);

    /** Generates the reply to a conversation whose last turn is the user's. */
    const respond = async (conversation: Conversation, key = apiKey): Promise<void> => {
        const extra = parseExtraFields(settings.extraFields);
        if ("error" in extra) {
            setNotice(extra.error);
            setSettingsOpen(true);
            return;
        }
        store(conversation);
        const abort = new AbortController();
        controller.current = abort;
        stickToBottom.current = true;
        let frame: number | undefined;
        let latest: Progress | undefined;
        const body = chatRequestBody(conversation.turns, settings, server.modelId ?? server.health?.model, extra.fields);
        const turn = await generateReply({
            body, apiKey: key, signal: abort.signal,
            onUpdate(progress) {
                // Tokens can come faster than frames: draw the newest state once per frame.
                latest = progress;
                frame ??= requestAnimationFrame(() => {
                    frame = undefined;
                    if (latest !== undefined) setLive({ ...latest, conversationId: conversation.id });
                });
            }
        });
        if (frame !== undefined) cancelAnimationFrame(frame);
        controller.current = null;
        const latestConversation = conversationsRef.current.find((item) => item.id === conversation.id);
        // Deleted while it streamed: nothing to keep.
        if (latestConversation !== undefined) store({ ...latestConversation, turns: [...conversation.turns, turn], updatedAt: Date.now() });
        setLive(null);
    };

    const send = (text: string): void => {
        const userTurn: Turn = { role: "user", id: newId(), content: text };
        const now = Date.now();
        const conversation: Conversation = current !== undefined
            ? { ...current, turns: [...current.turns, userTurn], updatedAt: now }
            : { id: newId(), title: titleFrom(text), createdAt: now, updatedAt: now, turns: [userTurn] };
        setCurrentId(conversation.id);
        void respond(conversation);
    };

    /** Drops the turns from `index` on and answers again (regenerate, retry, edit). */
    const resendFrom = (index: number, replacement?: string, key?: string): void => {
        if (current === undefined) return;
        const kept = current.turns.slice(0, index);
        const turns = replacement === undefined ? kept : [...kept, { role: "user" as const, id: newId(), content: replacement }];
        void respond({ ...current, turns, updatedAt: Date.now() }, key);
    };

    const saveKeyAndRetry = (key: string, index: number): void => {
        saveApiKey(key);
        setApiKey(key.trim());
        resendFrom(index, undefined, key.trim());
    };

    const newChat = (): void => {
        setCurrentId(null);
        setSidebarOpen(false);
    };

    const exportAll = (): void => {
        const url = URL.createObjectURL(new Blob([exportJson(conversations)], { type: "application/json" }));
        const link = document.createElement("a");
        link.href = url;
        link.download = `maple-chats-${new Date().toISOString().slice(0, 10)}.json`;
        link.click();
        setTimeout(() => URL.revokeObjectURL(url), 1000);
    };

    const importFile = async (file: File): Promise<void> => {
        try {
            const imported = parseImport(await file.text());
            for (const conversation of imported) await saveConversation(conversation);
            setConversations(await listConversations());
            setNotice(`Imported ${imported.length} chat${imported.length === 1 ? "" : "s"}.`);
        } catch (error) {
            setNotice(`Import failed: ${(error as Error).message}`);
        }
    };

    const generating = live !== null;
    const turns = current?.turns ?? [];
    return (
        <div class="app">
            <a class="skip-link" href="#composer-input">Skip to the message box</a>
            <Sidebar conversations={conversations} currentId={currentId} open={sidebarOpen} busyId={live?.conversationId ?? null}
                onSelect={(id) => {
                    setCurrentId(id);
                    setSidebarOpen(false);
                }}
                onNew={newChat}
                onRename={(id, title) => {
                    const conversation = conversations.find((item) => item.id === id);
                    if (conversation !== undefined) store({ ...conversation, title });
                }}
                onDelete={(id) => {
                    setConversations((list) => list.filter((item) => item.id !== id));
                    if (id === currentId) setCurrentId(null);
                    void deleteConversation(id);
                }}
                onExport={exportAll}
                onImport={(file) => void importFile(file)}
                onClose={() => setSidebarOpen(false)} />
            {sidebarOpen && <div class="backdrop" onClick={() => setSidebarOpen(false)} />}
            <main class="chat">
                <header class="topbar">
                    <button type="button" class="icon-button menu-button" aria-label="Show chats" aria-expanded={sidebarOpen}
                        onClick={() => setSidebarOpen(true)}><Icon name="menu" /></button>
                    <div class="model" title="From /v1/models and /health">
                        <span class={`status-dot ${server.offline ? "offline" : server.health?.status ?? "unknown"}`} aria-hidden="true" />
                        <span class="model-line">{serverLine(server)}</span>
                    </div>
                    <button type="button" class="icon-button" aria-label={`Theme: ${theme} (change)`} title={`Theme: ${theme}`}
                        onClick={() => {
                            const next = nextTheme[theme];
                            setTheme(next);
                            saveTheme(next);
                        }}><Icon name={themeIcon[theme]} /></button>
                    <button type="button" class="icon-button" aria-label="Settings" title="Settings" onClick={() => setSettingsOpen(true)}><Icon name="gear" /></button>
                </header>
                {notice !== null && (
                    <div class="banner" role="status">
                        <span>{notice}</span>
                        <button type="button" class="icon-button" aria-label="Dismiss" onClick={() => setNotice(null)}><Icon name="close" /></button>
                    </div>
                )}
                <div class="messages" ref={messages} role="log" aria-label="Messages"
                    onScroll={(event) => {
                        const element = event.currentTarget;
                        stickToBottom.current = element.scrollHeight - element.scrollTop - element.clientHeight < 80;
                    }}>
                    <div class="messages-inner">
                        {turns.length === 0 && liveHere === undefined && (
                            <div class="empty">
                                <h1>Maple</h1>
                                <p>Ask anything. The model's reasoning appears as it thinks.</p>
                            </div>
                        )}
                        {turns.map((turn, index) => turn.role === "user"
                            ? <UserTurnView key={turn.id} turn={turn} busy={generating} onResend={(text) => resendFrom(index, text)} />
                            : <AssistantTurnView key={turn.id} turn={turn} isLast={index === turns.length - 1 && liveHere === undefined} busy={generating}
                                    onRegenerate={() => resendFrom(index)}
                                    onSaveKeyAndRetry={(key) => saveKeyAndRetry(key, index)} />)}
                        {liveHere !== undefined && (
                            <AssistantTurnView key={liveHere.turn.id} turn={liveHere.turn} progress={liveHere} isLast busy
                                onRegenerate={() => undefined} onSaveKeyAndRetry={() => undefined} />
                        )}
                    </div>
                </div>
                <Composer generating={generating} disabled={server.offline === true} focusKey={currentId ?? "new"}
                    onSend={send} onStop={() => controller.current?.abort()} />
            </main>
            <SettingsDialog open={settingsOpen} settings={settings} apiKey={apiKey} onClose={() => setSettingsOpen(false)}
                onSave={(next, key) => {
                    setSettings(next);
                    saveSettings(next);
                    setApiKey(key.trim());
                    saveApiKey(key);
                    setSettingsOpen(false);
                }} />
        </div>
    );
}

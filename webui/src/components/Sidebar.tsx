import type { JSX } from "preact";
import { useRef, useState } from "preact/hooks";
import type { Conversation } from "../conversations.js";
import { Icon } from "./icons.js";

interface SidebarProps {
    conversations: Conversation[];
    currentId: string | null;
    open: boolean;
    busyId: string | null;
    onSelect(id: string): void;
    onNew(): void;
    onRename(id: string, title: string): void;
    onDelete(id: string): void;
    onExport(): void;
    onImport(file: File): void;
    onClose(): void;
}

function ConversationItem({ conversation, current, busy, onSelect, onRename, onDelete }: {
    conversation: Conversation; current: boolean; busy: boolean;
    onSelect(): void; onRename(title: string): void; onDelete(): void;
}): JSX.Element {
    const [mode, setMode] = useState<"view" | "rename" | "delete">("view");
    const [title, setTitle] = useState(conversation.title);
    if (mode === "rename") {
        const save = (): void => {
            if (title.trim() !== "") onRename(title.trim());
            setMode("view");
        };
        return (
            <li class="conversation renaming">
                <label class="visually-hidden" for={`rename-${conversation.id}`}>New name</label>
                <input id={`rename-${conversation.id}`} class="rename-input" value={title} autoFocus
                    onInput={(event) => setTitle(event.currentTarget.value)}
                    onBlur={save}
                    onKeyDown={(event) => {
                        if (event.key === "Enter") save();
                        else if (event.key === "Escape") setMode("view");
                    }} />
            </li>
        );
    }
    if (mode === "delete") {
        return (
            <li class="conversation confirming" role="group" aria-label={`Delete ${conversation.title}?`}>
                <span class="confirm-text">Delete this chat?</span>
                <button type="button" class="button danger" autoFocus onClick={onDelete}>Delete</button>
                <button type="button" class="button" onClick={() => setMode("view")}>Keep</button>
            </li>
        );
    }
    return (
        <li class={`conversation${current ? " current" : ""}`}>
            <button type="button" class="conversation-title" aria-current={current ? "page" : undefined} onClick={onSelect}>
                {conversation.title}
            </button>
            <button type="button" class="icon-button" title="Rename" aria-label={`Rename ${conversation.title}`} onClick={() => {
                setTitle(conversation.title);
                setMode("rename");
            }}><Icon name="edit" /></button>
            <button type="button" class="icon-button" title="Delete" aria-label={`Delete ${conversation.title}`} disabled={busy}
                onClick={() => setMode("delete")}><Icon name="trash" /></button>
        </li>
    );
}

export function Sidebar(props: SidebarProps): JSX.Element {
    const fileInput = useRef<HTMLInputElement>(null);
    return (
        <nav class={`sidebar${props.open ? " open" : ""}`} aria-label="Conversations">
            <div class="sidebar-head">
                <button type="button" class="button primary new-chat" onClick={props.onNew}><Icon name="plus" /> New chat</button>
                <button type="button" class="icon-button sidebar-close" aria-label="Close the list" onClick={props.onClose}><Icon name="close" /></button>
            </div>
            <ul class="conversations">
                {props.conversations.map((conversation) => (
                    <ConversationItem key={conversation.id} conversation={conversation} current={conversation.id === props.currentId}
                        busy={conversation.id === props.busyId}
                        onSelect={() => props.onSelect(conversation.id)}
                        onRename={(title) => props.onRename(conversation.id, title)}
                        onDelete={() => props.onDelete(conversation.id)} />
                ))}
                {props.conversations.length === 0 && <li class="empty-list">No chats yet.</li>}
            </ul>
            <div class="sidebar-foot">
                <button type="button" class="button" onClick={props.onExport} disabled={props.conversations.length === 0}><Icon name="download" /> Export</button>
                <button type="button" class="button" onClick={() => fileInput.current?.click()}><Icon name="upload" /> Import</button>
                <input ref={fileInput} class="visually-hidden" type="file" accept="application/json,.json" tabIndex={-1} aria-label="Import conversations"
                    onChange={(event) => {
                        const file = event.currentTarget.files?.[0];
                        if (file !== undefined) props.onImport(file);
                        event.currentTarget.value = "";
                    }} />
            </div>
        </nav>
    );
}

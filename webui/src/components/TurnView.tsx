import type { JSX } from "preact";
import { useState } from "preact/hooks";
import type { AssistantTurn, Stats, UserTurn } from "../conversations.js";
import type { Progress } from "../generate.js";
import { Icon } from "./icons.js";
import { Markdown } from "./Markdown.js";
import { Thinking } from "./Thinking.js";

function statsParts(stats: Stats): string[] {
    const parts = [
        stats.tokensPerSecond !== undefined ? `${stats.tokensPerSecond.toFixed(1)} tok/s` : undefined,
        `TTFT ${stats.timeToFirstTokenMs < 1000 ? `${Math.round(stats.timeToFirstTokenMs)} ms` : `${(stats.timeToFirstTokenMs / 1000).toFixed(2)} s`}`,
        `${stats.completionTokens} tokens${stats.reasoningTokens ? ` (${stats.reasoningTokens} thinking)` : ""}`,
        `prompt ${stats.promptTokens}`
    ];
    return parts.filter((part) => part !== undefined);
}

interface UserTurnProps {
    turn: UserTurn;
    busy: boolean;
    onResend(text: string): void;
}

export function UserTurnView({ turn, busy, onResend }: UserTurnProps): JSX.Element {
    const [draft, setDraft] = useState<string | undefined>(undefined);
    if (draft !== undefined) {
        const send = (): void => {
            if (draft.trim() === "" || busy) return;
            setDraft(undefined);
            onResend(draft);
        };
        return (
            <article class="turn user editing">
                <label class="visually-hidden" for={`edit-${turn.id}`}>Edit your message</label>
                <textarea id={`edit-${turn.id}`} class="edit-box" value={draft} autoFocus rows={3}
                    onInput={(event) => setDraft(event.currentTarget.value)}
                    onKeyDown={(event) => {
                        if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
                            event.preventDefault();
                            send();
                        } else if (event.key === "Escape") setDraft(undefined);
                    }} />
                <div class="edit-actions">
                    <button type="button" class="button" onClick={() => setDraft(undefined)}>Cancel</button>
                    <button type="button" class="button primary" disabled={busy || draft.trim() === ""} onClick={send}>Send</button>
                </div>
            </article>
        );
    }
    return (
        <article class="turn user">
            <div class="bubble">{turn.content}</div>
            <div class="turn-actions">
                <button type="button" class="icon-button" title="Edit and resend" aria-label="Edit and resend" disabled={busy}
                    onClick={() => setDraft(turn.content)}><Icon name="edit" /></button>
            </div>
        </article>
    );
}

interface AssistantTurnProps {
    turn: AssistantTurn;
    /** Present while this turn is being generated. */
    progress?: Progress;
    isLast: boolean;
    busy: boolean;
    onRegenerate(): void;
    onSaveKeyAndRetry(key: string): void;
}

function ApiKeyForm({ onSave }: { onSave(key: string): void }): JSX.Element {
    const [key, setKey] = useState("");
    return (
        <form class="api-key-form" onSubmit={(event) => {
            event.preventDefault();
            if (key.trim() !== "") onSave(key);
        }}>
            <label for="inline-api-key">API key</label>
            <input id="inline-api-key" type="password" autoComplete="off" value={key} onInput={(event) => setKey(event.currentTarget.value)} />
            <button type="submit" class="button primary">Save key and retry</button>
        </form>
    );
}

export function AssistantTurnView({ turn, progress, isLast, busy, onRegenerate, onSaveKeyAndRetry }: AssistantTurnProps): JSX.Element {
    const phase = progress?.phase;
    const thinkingLive = phase === "thinking";
    return (
        <article class="turn assistant" aria-busy={progress !== undefined} data-status={turn.status}>
            {turn.reasoning !== "" && (
                <Thinking text={turn.reasoning} live={thinkingLive} durationMs={turn.reasoningMs}
                    {...(progress?.thinkingSince !== undefined ? { since: progress.thinkingSince } : {})} />
            )}
            {turn.content !== "" && <Markdown text={turn.content} />}
            {phase === "waiting" && <div class="waiting" role="status"><span class="dot" /><span class="dot" /><span class="dot" /><span class="visually-hidden">Waiting for the model</span></div>}
            {phase === "retrying" && (
                <div class="notice busy" role="status">Server busy, retrying in {progress?.retryInSeconds} s… <span class="reason">{progress?.retryReason}</span></div>
            )}
            {turn.status === "stopped" && <div class="notice">Stopped.</div>}
            {turn.status === "done" && turn.finishReason === "length" && <div class="notice">Cut off at the token limit.</div>}
            {turn.status === "error" && (
                <div class="notice error" role="alert">
                    <p>{turn.error}</p>
                    {turn.errorKind === "unauthorized" && isLast && <ApiKeyForm onSave={onSaveKeyAndRetry} />}
                </div>
            )}
            {progress === undefined && (
                <footer class="turn-footer">
                    {turn.stats !== undefined && <span class="stats">{statsParts(turn.stats).map((part, index) => <span key={part}>{index > 0 ? " · " : ""}{part}</span>)}</span>}
                    {isLast && (
                        <button type="button" class="icon-button" title="Regenerate" aria-label="Regenerate" disabled={busy} onClick={onRegenerate}>
                            <Icon name="retry" />
                        </button>
                    )}
                </footer>
            )}
        </article>
    );
}

import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { parseExtraFields, type ChatSettings } from "../settings.js";
import { Icon } from "./icons.js";

interface SettingsDialogProps {
    open: boolean;
    settings: ChatSettings;
    apiKey: string;
    onSave(settings: ChatSettings, apiKey: string): void;
    onClose(): void;
}

/** A modal <dialog>: the browser keeps the focus inside and Escape closes it. */
export function SettingsDialog({ open, settings, apiKey, onSave, onClose }: SettingsDialogProps): JSX.Element {
    const dialog = useRef<HTMLDialogElement>(null);
    const [draft, setDraft] = useState(settings);
    const [key, setKey] = useState(apiKey);
    useEffect(() => {
        const element = dialog.current;
        if (element === null) return;
        if (open && !element.open) {
            setDraft(settings);
            setKey(apiKey);
            element.showModal();
        } else if (!open && element.open) element.close();
    }, [open]);
    const extra = parseExtraFields(draft.extraFields);
    const field = <K extends keyof ChatSettings>(name: K) => (value: ChatSettings[K]): void => setDraft({ ...draft, [name]: value });
    return (
        <dialog ref={dialog} class="settings" aria-labelledby="settings-title" onClose={onClose}>
            <form method="dialog" onSubmit={(event) => {
                event.preventDefault();
                if ("error" in extra) return;
                onSave(draft, key);
            }}>
                <header class="settings-head">
                    <h2 id="settings-title">Settings</h2>
                    <button type="button" class="icon-button" aria-label="Close settings" onClick={onClose}><Icon name="close" /></button>
                </header>
                <label for="system-prompt">System prompt</label>
                <textarea id="system-prompt" rows={3} value={draft.systemPrompt} onInput={(event) => field("systemPrompt")(event.currentTarget.value)} />
                <div class="settings-grid">
                    <div>
                        <label for="temperature">Temperature</label>
                        <input id="temperature" type="number" min="0" max="2" step="0.05" placeholder="server default" value={draft.temperature}
                            onInput={(event) => field("temperature")(event.currentTarget.value)} />
                    </div>
                    <div>
                        <label for="top-p">top_p</label>
                        <input id="top-p" type="number" min="0" max="1" step="0.05" placeholder="server default" value={draft.topP}
                            onInput={(event) => field("topP")(event.currentTarget.value)} />
                    </div>
                    <div>
                        <label for="max-tokens">Max tokens</label>
                        <input id="max-tokens" type="number" min="1" step="1" placeholder="server default" value={draft.maxTokens}
                            onInput={(event) => field("maxTokens")(event.currentTarget.value)} />
                    </div>
                </div>
                <label class="checkbox">
                    <input id="thinking" type="checkbox" checked={draft.thinking} onChange={(event) => field("thinking")(event.currentTarget.checked)} />
                    Thinking (reasoning_effort: medium, or none when off)
                </label>
                <label for="extra-fields">Extra request fields (JSON object, merged into every request)</label>
                <textarea id="extra-fields" rows={4} spellcheck={false} class="mono" placeholder={"{\"seed\": 42}"} value={draft.extraFields}
                    aria-invalid={"error" in extra} aria-describedby="extra-fields-error"
                    onInput={(event) => field("extraFields")(event.currentTarget.value)} />
                <p id="extra-fields-error" class="field-error" role="alert">{"error" in extra ? extra.error : ""}</p>
                <label for="api-key">API key (only if the server requires one; kept in this browser)</label>
                <input id="api-key" type="password" autoComplete="off" value={key} onInput={(event) => setKey(event.currentTarget.value)} />
                <footer class="settings-foot">
                    <button type="button" class="button" onClick={onClose}>Cancel</button>
                    <button type="submit" class="button primary" disabled={"error" in extra}>Save</button>
                </footer>
            </form>
        </dialog>
    );
}

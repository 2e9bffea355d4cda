import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { Icon } from "./icons.js";

interface ComposerProps {
    generating: boolean;
    disabled: boolean;
    onSend(text: string): void;
    onStop(): void;
    /** Changes when the conversation does: the box takes the focus back. */
    focusKey: string;
}

/** Enter sends, Shift+Enter starts a new line; while a reply streams the button stops it. */
export function Composer({ generating, disabled, onSend, onStop, focusKey }: ComposerProps): JSX.Element {
    const [text, setText] = useState("");
    const box = useRef<HTMLTextAreaElement>(null);
    useEffect(() => box.current?.focus(), [focusKey]);
    const send = (): void => {
        if (generating || disabled || text.trim() === "") return;
        onSend(text);
        setText("");
    };
    return (
        <form class="composer" onSubmit={(event) => {
            event.preventDefault();
            send();
        }}>
            <label class="visually-hidden" for="composer-input">Message</label>
            <textarea id="composer-input" ref={box} rows={1} value={text} placeholder="Message Maple (Enter to send, Shift+Enter for a new line)"
                onInput={(event) => setText(event.currentTarget.value)}
                onKeyDown={(event) => {
                    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
                        event.preventDefault();
                        send();
                    }
                }} />
            {generating
                ? <button type="button" class="send-button stop" onClick={onStop} aria-label="Stop"><Icon name="stop" /><span>Stop</span></button>
                : <button type="submit" class="send-button" disabled={disabled || text.trim() === ""} aria-label="Send"><Icon name="send" /><span>Send</span></button>}
        </form>
    );
}

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";

interface ThinkingProps {
    text: string;
    /** Still thinking: the block stays open and its clock runs. */
    live: boolean;
    /** Since when (performance.now()) while live. */
    since?: number;
    durationMs?: number;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** The model's reasoning: open while it streams, collapsed once the answer starts (the reader may open it again). */
export function Thinking({ text, live, since, durationMs }: ThinkingProps): JSX.Element {
    const [userOpen, setUserOpen] = useState<boolean | undefined>(undefined);
    const [, tick] = useState(0);
    useEffect(() => {
        if (!live) return;
        const timer = setInterval(() => tick((n) => n + 1), 100);
        return () => clearInterval(timer);
    }, [live]);
    useEffect(() => setUserOpen(undefined), [live]);
    const open = userOpen ?? live;
    const elapsed = live && since !== undefined ? performance.now() - since : durationMs;
    return (
        <details class="thinking" open={open} data-live={live ? "true" : undefined}
            onToggle={(event) => {
                const nowOpen = (event.currentTarget as HTMLDetailsElement).open;
                if (nowOpen !== open) setUserOpen(nowOpen);
            }}>
            <summary>
                <span class="thinking-label">{live ? "Thinking…" : "Thought"}</span>
                {elapsed !== undefined && <span class="thinking-time">{live ? seconds(elapsed) : `for ${seconds(elapsed)}`}</span>}
            </summary>
            <div class="thinking-text">{text}</div>
        </details>
    );
}

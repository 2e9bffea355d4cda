import type { JSX } from "preact";
import { useMemo } from "preact/hooks";
import { copyText, renderMarkdown } from "../markdown.js";

/** Copy buttons are plain markup in the sanitized HTML; one listener here serves them all. */
function onCopyClick(event: MouseEvent): void {
    const button = (event.target as Element).closest("button[data-copy]");
    const code = button?.closest(".code-block")?.querySelector("code");
    if (button === null || button === undefined || code === null || code === undefined) return;
    void copyText(code.textContent ?? "").then(() => {
        button.textContent = "Copied";
        setTimeout(() => (button.textContent = "Copy"), 1500);
    }, () => (button.textContent = "Copy failed"));
}

export function Markdown({ text }: { text: string }): JSX.Element {
    const html = useMemo(() => renderMarkdown(text), [text]);
    return <div class="markdown" onClick={onCopyClick} dangerouslySetInnerHTML={{ __html: html }} />;
}

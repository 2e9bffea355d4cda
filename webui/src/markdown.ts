// Model output is untrusted: Markdown becomes HTML through marked, and every byte of that HTML
// passes DOMPurify before it reaches the page (as a TrustedHTML, which the page's CSP requires).
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import go from "highlight.js/lib/languages/go";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import { Marked } from "marked";

// A few common languages keep the bundle small; anything else is shown as plain text.
for (const [name, language] of Object.entries({ bash, go, javascript, json, python, rust, typescript, xml, yaml })) {
    hljs.registerLanguage(name, language);
}

const escapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" };
const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (char) => escapes[char] ?? char);

function highlight(code: string, language: string): string {
    if (language !== "" && hljs.getLanguage(language) !== undefined) return hljs.highlight(code, { language, ignoreIllegals: true }).value;
    return escapeHtml(code);
}

const marked = new Marked({
    gfm: true,
    renderer: {
        code({ text, lang }) {
            const language = (lang ?? "").trim().split(/\s+/)[0]?.toLowerCase() ?? "";
            return `<div class="code-block"><div class="code-head"><span>${escapeHtml(language || "text")}</span>`
                + "<button type=\"button\" class=\"copy\" data-copy>Copy</button></div>"
                + `<pre><code class="hljs">${highlight(text, language)}</code></pre></div>`;
        }
    }
});

// Links leave the page in a new tab, without telling the target where they came from.
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A" && node.hasAttribute("href")) {
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer nofollow");
    }
});

const sanitizeOptions = {
    // HTML only (no SVG or MathML). No images: with no network at run time none could load, and a
    // same-origin one is only a request the model chose.
    USE_PROFILES: { html: true },
    FORBID_TAGS: ["img", "style", "form", "input", "textarea", "select", "dialog"],
    FORBID_ATTR: ["style", "autofocus"],
    RETURN_TRUSTED_TYPE: true as const
};

/** Markdown to sanitized HTML, ready for innerHTML. */
export function renderMarkdown(text: string): string {
    const html = marked.parse(text, { async: false });
    return DOMPurify.sanitize(html, sanitizeOptions) as unknown as string;
}

/** Copies a code block's text. */
export async function copyText(text: string): Promise<void> {
    if (navigator.clipboard !== undefined && window.isSecureContext) {
        await navigator.clipboard.writeText(text);
        return;
    }
    // Over plain http on another host the Clipboard API is not offered; a selected textarea still copies.
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "offscreen";
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
}

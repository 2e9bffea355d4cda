import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { chromium, type BrowserContext, type Locator, type Page } from "playwright-core";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { waitForHealth } from "../helpers/waitFor.js";
import { exact } from "../helpers/grammar.js";

/**
 * The web chat in a real browser: Debian's Chromium (`.ci/run` installs it; never a downloaded
 * one) driven by playwright-core, against a real Maple on maple-tiny. The extra-fields box sets a
 * `grammar`, so the random-weight model writes a known reasoning and a known Markdown answer.
 */
const chromiumPath = process.env.MAPLE_TEST_CHROMIUM ?? "/usr/bin/chromium";
const chromiumFlags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"];
/** Screenshots of the main states, for a person to look at; dist/ is git-ignored. */
const screenshotDir = new URL("../../test-artifacts/webui/", import.meta.url).pathname;
const apiKey = "browser-test-key";
/** Generous: a shared 2-core machine can be slow; these bound waits, they time nothing. */
const slow = { timeout: 120_000 };

// Long enough to stream over many frames, so the page draws the open Thinking block before the answer.
const reasoning = "The user wants a list and some code: two items, one in bold, then short JavaScript that prints a number.";
const markdownAnswer = "Here is a list:\n\n- first item\n- **second** item\n\n```js\nconst answer = 42;\nconsole.log(answer);\n```\n";
const knownOutput = exact(`${reasoning}\n</think>\n\n${markdownAnswer}`);
/** Reasoning long enough that Stop lands while it streams (llama.cpp refuses more than 2000 repetitions). */
const longThinking = "root ::= \"Thinking it over:\" \" step\"{1500} \"\\n</think>\\n\\nnever reached\"";
const xssPayload = "<img src=x onerror=\"window.__pwned='img';alert('img')\"><script>window.__pwned='script';alert('script')</script>"
    + "<a href=\"javascript:window.__pwned='link'\">click</a><svg onload=\"window.__pwned='svg'\"></svg>";
const xssOutput = exact(`Reasoning <script>alert('thinking')</script>\n</think>\n\nAnswer ${xssPayload} **still rendered**`);

interface PageWatch {
    dialogs: string[];
    errors: string[];
}

async function openSettings(page: Page): Promise<Locator> {
    await page.getByRole("button", { name: "Settings" }).click();
    const dialog = page.getByRole("dialog", { name: "Settings" });
    await dialog.waitFor();
    return dialog;
}

async function setExtraFields(page: Page, fields: Record<string, unknown>): Promise<void> {
    const dialog = await openSettings(page);
    await dialog.getByLabel("Extra request fields").fill(JSON.stringify(fields));
    await dialog.getByRole("button", { name: "Save" }).click();
    await dialog.waitFor({ state: "hidden" });
}

async function send(page: Page, text: string): Promise<void> {
    const box = page.getByLabel("Message", { exact: true });
    await box.fill(text);
    await box.press("Enter");
}

const lastAssistant = (page: Page): Locator => page.locator(".turn.assistant").last();

async function waitForAnswer(page: Page): Promise<Locator> {
    const turn = lastAssistant(page);
    await turn.locator(".stats").waitFor(slow);
    return turn;
}

async function screenshot(page: Page, name: string): Promise<void> {
    await page.screenshot({ path: join(screenshotDir, `${name}.png`) });
}

/**
 * Records, at every DOM change of the reply being written, whether its Thinking block is open,
 * how much reasoning it shows and whether the answer has started: the stream's course, with no
 * timing involved.
 */
async function recordThinking(page: Page): Promise<void> {
    await page.evaluate(`(() => {
        window.__thinkingStates = [];
        const observer = new MutationObserver(() => {
            const turns = document.querySelectorAll(".turn.assistant");
            const turn = turns[turns.length - 1];
            const details = turn && turn.querySelector("details.thinking");
            if (!details) return;
            window.__thinkingStates.push({
                open: details.open,
                reasoning: (details.querySelector(".thinking-text") || {}).textContent || "",
                answer: turn.querySelector(".markdown") !== null
            });
        });
        observer.observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    })()`);
}

interface ThinkingState {
    open: boolean;
    reasoning: string;
    answer: boolean;
}

describe("the web chat in Chromium", () => {
    let server: TestServer;
    let context: BrowserContext;
    let page: Page;
    const watch: PageWatch = { dialogs: [], errors: [] };
    let profileDir: string;

    before(async () => {
        assert.ok(existsSync(chromiumPath), `no Chromium at ${chromiumPath}: apt-get install -y chromium (.ci/run does)`);
        rmSync(screenshotDir, { recursive: true, force: true });
        mkdirSync(screenshotDir, { recursive: true });
        // No queue: a second request while one generates is refused with 503 + Retry-After at once.
        // 4096: the conversation these tests build up (a long reasoned answer, then resends of it) came
        // within a few tokens of 1024, and a regenerated answer was cut off at the context's end.
        server = await startTestServer({ apiKey, parallel: 1, maxQueueDepth: 0, contextSize: 4096 });
        profileDir = mkdtempSync(join(tmpdir(), "maple-chromium-"));
        // A fresh profile each run: no state from an earlier run (IndexedDB, the stored key) leaks in.
        context = await chromium.launchPersistentContext(profileDir, {
            executablePath: chromiumPath, args: chromiumFlags,
            viewport: { width: 1200, height: 800 }, colorScheme: "light", permissions: ["clipboard-read", "clipboard-write"]
        });
        // Any request leaving the machine is a defect: the page needs nothing but its own origin.
        await context.route((url) => url.origin !== new URL(server.url).origin, (route) => {
            watch.errors.push(`request to another origin: ${route.request().url()}`);
            return route.abort();
        });
        await context.addInitScript(`window.addEventListener("securitypolicyviolation", (event) => {
            (window.__cspViolations = window.__cspViolations || []).push(event.violatedDirective + " " + event.blockedURI);
        });`);
        page = context.pages()[0] ?? await context.newPage();
        page.on("dialog", (dialog) => {
            watch.dialogs.push(dialog.message());
            void dialog.dismiss();
        });
        page.on("pageerror", (error) => watch.errors.push(error.message));
        await page.goto(server.url);
        await page.locator(".status-dot.ok").waitFor(slow);
    });
    after(async () => {
        await context?.close();
        await server?.close();
        if (profileDir !== undefined) rmSync(profileDir, { recursive: true, force: true });
    });

    it("shows the model and its context size from the API; the settings dialog closes with Escape", async () => {
        await assert.doesNotReject(page.locator(".model-line", { hasText: "maple-preview · 4,096 ctx" }).waitFor());
        await screenshot(page, "empty");
        const dialog = await openSettings(page);
        await dialog.getByLabel("Extra request fields").fill("{not json");
        await dialog.locator(".field-error", { hasText: "not valid JSON" }).waitFor();
        assert.equal(await dialog.getByRole("button", { name: "Save" }).isDisabled(), true);
        await screenshot(page, "settings");
        await page.keyboard.press("Escape");
        await dialog.waitFor({ state: "hidden" });
    });

    it("asks for the API key on a 401, then streams the thinking, collapses it and renders the Markdown answer", async () => {
        await setExtraFields(page, { grammar: knownOutput, max_tokens: 400 });
        await send(page, "Show me a list and some code");
        const refusal = lastAssistant(page).locator(".notice.error");
        await refusal.waitFor(slow);
        assert.match(await refusal.innerText(), /API key \(401\)/);
        await screenshot(page, "api-key-asked");

        await recordThinking(page);
        await refusal.getByLabel("API key").fill(apiKey);
        await refusal.getByRole("button", { name: "Save key and retry" }).click();
        const turn = await waitForAnswer(page);

        const states = await page.evaluate("window.__thinkingStates") as ThinkingState[];
        assert.ok(states.some((state) => state.open && state.reasoning.length > 0 && state.reasoning.length < reasoning.length && !state.answer),
            `the reasoning streamed into an open Thinking block before the answer: ${JSON.stringify(states.slice(0, 5))}…`);
        assert.deepEqual({ ...states.at(-1)!, reasoning: undefined }, { open: false, reasoning: undefined, answer: true }, "collapsed once the answer started");
        assert.match(await turn.locator(".thinking summary").innerText(), /Thought\s+for \d+\.\d s/);
        assert.equal(await turn.locator(".thinking").evaluate((details) => (details as unknown as { open: boolean }).open), false);

        const answer = turn.locator(".markdown");
        assert.deepEqual(await answer.locator("ul > li").allInnerTexts(), ["first item", "second item"]);
        assert.equal(await answer.locator("ul strong").innerText(), "second");
        assert.equal(await answer.locator(".code-block .code-head span").innerText(), "js");
        assert.equal(await answer.locator("pre code").innerText(), "const answer = 42;\nconsole.log(answer);");
        assert.ok(await answer.locator("pre code .hljs-keyword").count() > 0, "the code is highlighted");
        assert.match(await turn.locator(".stats").innerText(), /^\d+\.\d tok\/s · TTFT \d+(\.\d+)? m?s · \d+ tokens \(\d+ thinking\) · prompt \d+$/);
        await screenshot(page, "answer-light");
        assert.deepEqual(await page.evaluate("window.__cspViolations || []"), [], "the page itself keeps to its CSP and Trusted Types");

        await answer.getByRole("button", { name: "Copy" }).click();
        await answer.getByRole("button", { name: "Copied" }).waitFor();
        assert.equal(await page.evaluate("navigator.clipboard.readText()"), "const answer = 42;\nconsole.log(answer);");
    });

    it("Stop aborts the request mid-stream and the server frees the slot", async () => {
        await setExtraFields(page, { grammar: longThinking, max_tokens: 1600 });
        await send(page, "Think for a long time");
        const turn = lastAssistant(page);
        await turn.locator(".thinking[data-live] .thinking-text", { hasText: "step step step" }).waitFor(slow);
        await waitForHealth(server, (health) => health.active === 1, "the generation to hold the slot");
        await screenshot(page, "thinking");
        await page.getByRole("button", { name: "Stop" }).click();
        await waitForHealth(server, (health) => health.active === 0 && health.queue_depth === 0, "the slot to free after Stop", 30_000);
        await turn.locator(".notice", { hasText: "Stopped." }).waitFor();
        assert.equal(await turn.getAttribute("data-status"), "stopped");
        assert.doesNotMatch(await turn.innerText(), /never reached/);
        await page.getByRole("button", { name: "Send", exact: true }).waitFor();
    });

    it("Shift+Enter makes a new line; Enter alone sends", async () => {
        const box = page.getByLabel("Message", { exact: true });
        await box.focus();
        await page.keyboard.type("line one");
        await page.keyboard.press("Shift+Enter");
        await page.keyboard.type("line two");
        assert.equal(await box.inputValue(), "line one\nline two");
        assert.equal(await page.locator(".turn").count(), 4, "nothing was sent");
        await box.fill("");
    });

    it("regenerates the last answer, and resends an edited message in place of what followed", async () => {
        await setExtraFields(page, { grammar: exact("Short.\n</think>\n\nRegenerated answer."), max_tokens: 100 });
        await lastAssistant(page).getByRole("button", { name: "Regenerate" }).click();
        await lastAssistant(page).locator(".markdown", { hasText: "Regenerated answer." }).waitFor(slow);
        await waitForAnswer(page);
        assert.equal(await lastAssistant(page).locator(".markdown").innerText(), "Regenerated answer.");
        assert.equal(await page.locator(".turn").count(), 4, "the stopped reply was replaced, not kept");

        await setExtraFields(page, { grammar: exact("Edited.\n</think>\n\nAnswer to the edit."), max_tokens: 100 });
        await page.locator(".turn.user").last().hover();
        await page.locator(".turn.user").last().getByRole("button", { name: "Edit and resend" }).click();
        const editor = page.getByLabel("Edit your message");
        await editor.fill("An edited question");
        await editor.press("Enter");
        await lastAssistant(page).locator(".markdown", { hasText: "Answer to the edit." }).waitFor(slow);
        await waitForAnswer(page);
        assert.deepEqual(await page.locator(".turn.user .bubble").allInnerTexts(), ["Show me a list and some code", "An edited question"]);
        assert.equal(await page.locator(".turn").count(), 4);
    });

    it("keeps the conversation, renamed, across a reload (IndexedDB)", async () => {
        const item = page.locator(".conversation.current");
        await item.getByRole("button", { name: /^Rename/ }).click();
        const name = page.getByLabel("New name");
        await name.fill("Lists and code");
        await name.press("Enter");
        await page.locator(".conversation.current .conversation-title", { hasText: "Lists and code" }).waitFor();

        await page.reload();
        await page.locator(".status-dot.ok").waitFor(slow);
        await page.locator(".conversation.current .conversation-title", { hasText: "Lists and code" }).waitFor();
        assert.deepEqual(await page.locator(".turn.user .bubble").allInnerTexts(), ["Show me a list and some code", "An edited question"]);
        assert.equal(await page.locator(".turn.assistant .markdown").last().innerText(), "Answer to the edit.");
        assert.deepEqual(await page.locator(".turn.assistant .markdown").first().locator("ul > li").allInnerTexts(), ["first item", "second item"]);
        assert.match(await page.locator(".turn.assistant .stats").first().innerText(), /tok\/s/);
    });

    it("runs nothing from a reply carrying <img onerror>, <script>, javascript: links or <svg onload>", async () => {
        await page.getByRole("button", { name: "New chat" }).click();
        await setExtraFields(page, { grammar: xssOutput, max_tokens: 600 });
        await send(page, "Say something dangerous");
        const turn = await waitForAnswer(page);
        // Rendered, but defused: the sanitizer removed the handlers and the script.
        assert.equal(await turn.locator(".markdown strong").innerText(), "still rendered");
        assert.equal(await turn.locator(".markdown").locator("script, img, svg, [onerror], [onload], a[href^='javascript']").count(), 0);
        assert.equal(await turn.locator("script, [onerror], [onload]").count(), 0);
        assert.equal(await turn.locator(".markdown a", { hasText: "click" }).count(), 1, "the link's text stays");
        // The reasoning is shown as text, markup and all.
        await turn.locator(".thinking summary").click();
        assert.equal(await turn.locator(".thinking-text").innerText(), "Reasoning <script>alert('thinking')</script>");
        assert.equal(await page.evaluate("window.__pwned"), undefined, "no payload ran");
        assert.deepEqual(watch.dialogs, [], "no dialog opened");
        // DOMPurify parses the reply in an inert document, where Chromium already reports the inline
        // handlers to the page's CSP; nothing else (no script, no Trusted Types breach) may show up.
        const violations = await page.evaluate("window.__cspViolations || []") as string[];
        assert.deepEqual(violations.filter((violation) => violation !== "script-src-attr inline"), []);
    });

    it("says the server is busy (503, Retry-After), counts down and retries by itself", async () => {
        // Another client holds the only slot; with no queue, the page's request is refused at once.
        const holder = new AbortController();
        const held = await server.request("/v1/chat/completions", {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
            body: JSON.stringify({ messages: [{ role: "user", content: "hold" }], grammar: longThinking, max_tokens: 1600, stream: true }),
            signal: holder.signal
        });
        assert.equal(held.status, 200);
        await waitForHealth(server, (health) => health.active === 1, "the other client to hold the slot");
        try {
            await setExtraFields(page, { grammar: exact("Ok.\n</think>\n\nServed after the wait."), max_tokens: 100 });
            await send(page, "Are you busy?");
            const busy = lastAssistant(page).locator(".notice.busy");
            await busy.waitFor(slow);
            assert.match(await busy.innerText(), /^Server busy, retrying in [1-5] s…/);
        } finally {
            holder.abort();
        }
        await lastAssistant(page).locator(".markdown", { hasText: "Served after the wait." }).waitFor(slow);
        // Its stream ends before the next test sends: the composer takes no message while one streams.
        await waitForAnswer(page);
        assert.equal(await lastAssistant(page).locator(".notice").count(), 0);
    });

    it("sends the settings: system prompt, temperature, top_p, max tokens, thinking off, extra fields", async () => {
        const dialog = await openSettings(page);
        await dialog.getByLabel("System prompt").fill("You are terse.");
        await dialog.getByLabel("Temperature").fill("0.3");
        await dialog.getByLabel("top_p").fill("0.9");
        await dialog.getByLabel("Max tokens").fill("60");
        await dialog.getByLabel(/^Thinking/).uncheck();
        await dialog.getByLabel("Extra request fields").fill(JSON.stringify({ grammar: exact("Straight to the answer."), seed: 7 }));
        await dialog.getByRole("button", { name: "Save" }).click();
        await dialog.waitFor({ state: "hidden" });
        const sent = page.waitForRequest((request) => request.url().endsWith("/v1/chat/completions"));
        await send(page, "No thinking please");
        const body = (await sent).postDataJSON() as Record<string, unknown>;
        assert.deepEqual({ ...body, messages: (body.messages as unknown[]).slice(0, 1) }, {
            model: "maple-preview",
            messages: [{ role: "system", content: "You are terse." }],
            stream: true,
            stream_options: { include_usage: true },
            temperature: 0.3,
            top_p: 0.9,
            max_tokens: 60,
            reasoning_effort: "none",
            grammar: exact("Straight to the answer."),
            seed: 7
        });
        await lastAssistant(page).locator(".markdown", { hasText: "Straight to the answer." }).waitFor(slow);
        const turn = await waitForAnswer(page);
        assert.equal(await turn.locator(".markdown").innerText(), "Straight to the answer.");
        assert.equal(await turn.locator(".thinking").count(), 0, "no Thinking block with thinking off");
    });

    it("keeps the partial answer and says so when the connection drops mid-stream, or the server cannot be reached", async () => {
        // The network is what fails here, not Maple: the browser's view of a stream cut short.
        const chunk = { id: "x", object: "chat.completion.chunk", created: 0, model: "maple-preview", choices: [{ index: 0, delta: { content: "Partial ans" }, finish_reason: null }] };
        await page.route("**/v1/chat/completions", (route) => route.fulfill({ status: 200, contentType: "text/event-stream", body: `data: ${JSON.stringify(chunk)}\n\n` }), { times: 1 });
        await lastAssistant(page).getByRole("button", { name: "Regenerate" }).click();
        const error = lastAssistant(page).locator(".notice.error");
        await error.waitFor(slow);
        assert.equal(await error.innerText(), "The connection dropped before the answer finished.");
        assert.equal(await lastAssistant(page).locator(".markdown").innerText(), "Partial ans");

        await page.route("**/v1/chat/completions", (route) => route.abort("connectionrefused"), { times: 1 });
        await lastAssistant(page).getByRole("button", { name: "Regenerate" }).click();
        await lastAssistant(page).locator(".notice.error", { hasText: "Cannot reach the server" }).waitFor(slow);
        await screenshot(page, "connection-lost");
    });

    it("exports the conversations as JSON, deletes one, and imports it back", async () => {
        const titles = async (): Promise<string[]> => (await page.locator(".conversation-title").allInnerTexts()).sort();
        const before = await titles();
        assert.equal(before.length, 2);
        const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export" }).click()]);
        const exported = join(profileDir, "export.json");
        await download.saveAs(exported);
        const file = JSON.parse(readFileSync(exported, "utf8")) as { format: string; conversations: { title: string; turns: unknown[] }[] };
        assert.equal(file.format, "maple-webui-conversations");
        assert.deepEqual(file.conversations.map((conversation) => conversation.title).sort(), before);

        await page.getByRole("button", { name: "Delete Lists and code" }).click();
        await page.getByRole("group", { name: "Delete Lists and code?" }).getByRole("button", { name: "Delete" }).click();
        await page.locator(".conversation-title", { hasText: "Lists and code" }).waitFor({ state: "detached" });
        await page.reload();
        await page.locator(".conversation-title").first().waitFor();
        assert.equal((await titles()).includes("Lists and code"), false, "deleted for good");

        await page.getByLabel("Import conversations").setInputFiles(exported);
        await page.locator(".banner", { hasText: "Imported 2 chats." }).waitFor();
        assert.deepEqual(await titles(), before);
        await page.locator(".conversation-title", { hasText: "Lists and code" }).click();
        assert.deepEqual(await page.locator(".turn.user .bubble").allInnerTexts(), ["Show me a list and some code", "An edited question"]);
    });

    it("looks right in dark mode and at phone width (screenshots)", async () => {
        await page.locator(".conversation-title", { hasText: "Lists and code" }).click();
        await page.locator(".turn.assistant .markdown ul").first().waitFor();
        await page.emulateMedia({ colorScheme: "dark" });
        const background = await page.evaluate("getComputedStyle(document.body).backgroundColor");
        assert.equal(background, "rgb(27, 26, 25)", "the dark palette applies");
        await screenshot(page, "answer-dark");

        await page.emulateMedia({ colorScheme: "light" });
        await page.setViewportSize({ width: 390, height: 844 });
        assert.equal(await page.locator(".sidebar").isVisible(), false, "the chat list is tucked away on a phone");
        const width = await page.evaluate("document.documentElement.scrollWidth") as number;
        assert.ok(width <= 390, `nothing overflows sideways (${width}px)`);
        await screenshot(page, "phone");
        await page.getByRole("button", { name: "Show chats" }).click();
        await page.locator(".sidebar.open").waitFor();
        await page.evaluate("Promise.all(document.querySelector('.sidebar').getAnimations().map((animation) => animation.finished))");
        await screenshot(page, "phone-sidebar");
        assert.deepEqual(watch.errors, [], "no page errors and no request to another origin");
    });
});

import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import { keepAttributionBlocks } from "../../src/anthropic/attributionBlocks.js";
import { parseMessagesPrompt } from "../../src/anthropic/messagesRequest.js";

/** Claude Code's per-session attribution block is left out of the prompt, so sessions share their preamble. */

const header = (hash: string) => ({ type: "text", text: `x-anthropic-billing-header: cc_version=2.1.332.${hash}; cc_entrypoint=sdk-cli;` });
const systemOf = (hash: string) => parseMessagesPrompt({
    system: [header(hash), { type: "text", text: "You are Claude Code.", cache_control: { type: "ephemeral" } }],
    messages: [{ role: "user", content: "hi" }]
}).messages[0];

describe("Claude Code's attribution block", () => {
    afterEach(() => keepAttributionBlocks(false));

    it("is left out of the system prompt, so two sessions render the same preamble", () => {
        assert.deepEqual(systemOf("4a6"), { role: "system", content: "You are Claude Code." });
        assert.deepEqual(systemOf("dcb"), systemOf("4a6"));
    });

    it("a system of nothing else leaves no system turn", () => {
        const prompt = parseMessagesPrompt({ system: [header("4a6")], messages: [{ role: "user", content: "hi" }] });
        assert.deepEqual(prompt.messages, [{ role: "user", content: "hi" }]);
    });

    it("text that merely mentions it, and a string system, are kept", () => {
        const mention = "See x-anthropic-billing-header: in the docs.";
        assert.equal(parseMessagesPrompt({ system: [{ type: "text", text: mention }], messages: [{ role: "user", content: "hi" }] }).messages[0]?.content, mention);
        const text = "x-anthropic-billing-header: a string system is the client's own text";
        assert.equal(parseMessagesPrompt({ system: text, messages: [{ role: "user", content: "hi" }] }).messages[0]?.content, text);
    });

    it("MAPLE_KEEP_BILLING_HEADER keeps it", () => {
        keepAttributionBlocks(true);
        assert.equal(systemOf("4a6")?.content, `${header("4a6").text}\nYou are Claude Code.`);
    });
});

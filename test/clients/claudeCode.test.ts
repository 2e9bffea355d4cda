import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { grammarProxy, messageTurns as turnsOf, promptTokens as total, runClaude as run, type Exchange } from "../helpers/claudeCode.js";
import { exact as exactly } from "../helpers/grammar.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";

/**
 * Claude Code in print mode against a real Maple server (see helpers/claudeCode.ts), with its real
 * system prompt, tool list, thinking, cache_control and anthropic-beta headers. The proxy's
 * grammar makes the random-weight model answer exactly: first a Bash tool call, which Claude Code
 * runs, then, once the tool's result is back, a final text.
 */

const marker = "maple-tool-ok";
const toolCallTurn = exactly(`I will run it.\n</think>\n\n<tool_call>\n{"name": "Bash", "arguments": {"command": "echo ${marker}", "description": "Print a marker"}}\n</tool_call>`);
const finalTurn = exactly(`The command ran.\n</think>\n\nThe command printed ${marker}.`);

describe("Claude Code (claude -p) against Maple", () => {
    let maple: TestServer;
    let proxy: Server;
    let home: string;
    const exchanges: Exchange[] = [];

    before(async () => {
        // Claude Code's system prompt and tools alone are over Maple's default 8192-token context.
        maple = await startTestServer({ parallel: 1, contextSize: 32768, maxNewTokensLimit: 512, apiKey: "sk-ant-maple" });
        proxy = grammarProxy(maple, exchanges, (body) => JSON.stringify(body.messages?.at(-1) ?? "").includes("tool_result") ? finalTurn : toolCallTurn);
        await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
        home = await mkdtemp(join(tmpdir(), "maple-claude-code-"));
    });
    after(async () => {
        await new Promise((resolve) => proxy.close(resolve));
        await maple.close();
        await rm(home, { recursive: true, force: true });
    });

    const runClaude = (prompt: string): Promise<string> => run(proxy, home, prompt, exchanges);
    const messageTurns = (): Exchange[] => turnsOf(exchanges);

    it("completes a turn with a tool call: Claude Code runs Bash, sends the result back, prints Maple's answer", async (t) => {
        const stdout = await runClaude("Run echo to print a marker.");
        assert.equal(stdout.trim(), `The command printed ${marker}.`);

        const turns = messageTurns();
        assert.deepEqual(turns.map((exchange) => exchange.status), [200, 200]);
        const [first, second] = turns;
        assert.equal(first!.headers["x-api-key"], "sk-ant-maple");
        assert.ok(String(first!.headers["anthropic-beta"]).length > 0);
        assert.equal(first!.body.stream, true);
        assert.ok(first!.body.thinking !== undefined);
        assert.ok((first!.body.tools?.length ?? 0) >= 10, `${first!.body.tools?.length} tools`);
        assert.ok(JSON.stringify(first!.body).includes("cache_control"));
        assert.ok(first!.body.messages!.some((message) => message.role === "system"), "a system turn inside messages");
        // The tool really ran: its output came back as a tool_result, after Maple's tool_use and thinking block.
        const sentBack = JSON.stringify(second!.body.messages!.slice(-2));
        assert.match(sentBack, /"type":"thinking"/);
        assert.match(sentBack, /"type":"tool_use".*"name":"Bash"/);
        assert.match(sentBack, new RegExp(`"type":"tool_result".*${marker}`));
        // The second turn's prompt starts with the first one's: Maple reused it from the slot.
        assert.ok(second!.usage!.cache_read_input_tokens > total(first!.usage) / 2, JSON.stringify(second!.usage));
        assert.ok(total(first!.usage) > 8192, `Claude Code's first prompt: ${total(first!.usage)} tokens`);
        t.diagnostic(`Claude Code's prompts: ${total(first!.usage)} and ${total(second!.usage)} tokens (${second!.usage!.cache_read_input_tokens} read from the cache); more than an 8192-token context`);
    });

    it("a second session, with another prompt, starts warm: its first request reads its preamble from the cache", async (t) => {
        const before = messageTurns().length;
        assert.equal((await runClaude("Print the marker with echo, please.")).trim(), `The command printed ${marker}.`);
        const first = messageTurns()[before]!;
        // Its per-session attribution block (x-anthropic-billing-header) differs from the first session's; Maple leaves it out.
        assert.match(JSON.stringify(first.body.system), /x-anthropic-billing-header/);
        assert.ok(first.usage!.cache_read_input_tokens >= 0.8 * total(first.usage), JSON.stringify(first.usage));
        t.diagnostic(`the second session's first prompt: ${total(first.usage)} tokens, ${first.usage!.cache_read_input_tokens} read from the cache`);
    });
});

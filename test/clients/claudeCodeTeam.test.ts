import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { grammarProxy, messageTurns, promptTokens, runClaude, toolResults, type ClaudeCodeBody, type Exchange } from "../helpers/claudeCode.js";
import { exact } from "../helpers/grammar.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";

/**
 * Developers sharing one Maple server with Claude Code (`claude -p`, see helpers/claudeCode.ts),
 * each in a home folder of their own, on maple-tiny with one slot, so their requests take turns
 * on it: the prompt cache is all that keeps a session's prefix between its requests.
 */

const marker = "maple-tool-ok";
/** Tool calls in each session's loop before its final answer. */
const loopCalls = 3;
/** A thought longer than maple-tiny's 128-token sliding window, as real thoughts are longer than maple-preview's. */
const thought = `I will run it.${" Then I will check the output carefully, line by line.".repeat(8)}`;
const toolCallTurn = (call: number): string =>
    exact(`${thought}\n</think>\n\n<tool_call>\n{"name": "Bash", "arguments": {"command": "echo ${marker}-${call}", "description": "Print a marker"}}\n</tool_call>`);
const finalTurn = exact(`The command ran.\n</think>\n\nThe command printed ${marker}.`);

/** The system prompt as Maple renders it: its text blocks but Claude Code's per-session attribution block (src/anthropic/attributionBlocks.ts), joined with a newline. */
function systemText(body: ClaudeCodeBody): string {
    const blocks = body.system as { type: string; text: string }[];
    return blocks.filter((block) => !block.text.startsWith("x-anthropic-billing-header:")).map((block) => block.text).join("\n");
}

describe("Claude Code sessions of developers with their own home folders, on one slot", () => {
    let maple: TestServer;
    let proxy: Server;
    const homes: Record<string, string> = {};
    const exchanges: Exchange[] = [];

    before(async () => {
        maple = await startTestServer({ parallel: 1, contextSize: 32768, maxNewTokensLimit: 512, apiKey: "sk-ant-maple" });
        proxy = grammarProxy(maple, exchanges, (body) => {
            const calls = toolResults(body);
            return calls >= loopCalls ? finalTurn : toolCallTurn(calls);
        });
        await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
        for (const name of ["alice", "bob", "carol"]) homes[name] = await mkdtemp(join(tmpdir(), `maple-claude-code-${name}-`));
    });
    after(async () => {
        await new Promise((resolve) => proxy.close(resolve));
        await maple.close();
        for (const home of Object.values(homes)) await rm(home, { recursive: true, force: true });
    });

    /** A session's /v1/messages requests, in order (its metadata.user_id names the session). */
    const sessionTurns = (first: Exchange): Exchange[] =>
        messageTurns(exchanges).filter((exchange) => exchange.body.metadata?.user_id === first.body.metadata?.user_id);
    const firstTurnOf = (home: string): Exchange => {
        const found = messageTurns(exchanges).find((exchange) => JSON.stringify(exchange.body.system).includes(home));
        assert.ok(found !== undefined, `no request from ${home}`);
        return found;
    };

    it("two sessions taking turns on the slot: each request of a tool loop reads its whole prompt from the cache but for its last answer and tool result", async (t) => {
        const outputs = await Promise.all([
            runClaude(proxy, homes["alice"]!, "Run echo to print a marker.", exchanges),
            runClaude(proxy, homes["bob"]!, "Print the marker with echo, please.", exchanges)
        ]);
        assert.deepEqual(outputs.map((stdout) => stdout.trim()), [`The command printed ${marker}.`, `The command printed ${marker}.`]);
        for (const name of ["alice", "bob"]) {
            const turns = sessionTurns(firstTurnOf(homes[name]!));
            assert.deepEqual(turns.map((turn) => toolResults(turn.body)), [0, 1, 2, 3]);
            assert.deepEqual(turns.map((turn) => turn.status), [200, 200, 200, 200]);
            for (let index = 1; index < turns.length; index += 1) {
                // The request repeats the one before it whole, but for the pre-filled `<think>` Maple rendered there.
                const previous = promptTokens(turns[index - 1]!.usage);
                assert.ok(turns[index]!.usage!.cache_read_input_tokens >= previous - 2,
                    `${name}'s request ${index}: ${JSON.stringify(turns[index]!.usage)}, the one before: ${previous} prompt tokens`);
            }
            t.diagnostic(`${name}: ${turns.map((turn) => `${turn.usage!.cache_read_input_tokens} of ${promptTokens(turn.usage)}`).join(", ")} prompt tokens read from the cache`);
        }
    });

    it("their system prompts differ only in the home folder, which Claude Code's memory directory names; a third developer's first request reads the prompt up to it", async (t) => {
        const alice = firstTurnOf(homes["alice"]!);
        const bob = firstTurnOf(homes["bob"]!);
        assert.deepEqual(alice.body.tools, bob.body.tools);
        const [aliceSystem, bobSystem] = [systemText(alice.body), systemText(bob.body)];
        assert.notEqual(aliceSystem, bobSystem);
        // The memory directory is `HOME/.claude/projects/<working directory, / as ->/memory/`; the working directory is the home folder here.
        const withoutHome = (text: string, home: string): string => text.replaceAll(home, "~").replaceAll(home.replaceAll("/", "-"), "<cwd>");
        assert.equal(withoutHome(aliceSystem, homes["alice"]!), withoutHome(bobSystem, homes["bob"]!));
        // Where they part: the first mention of the home folder, in the memory directory's path.
        const home = aliceSystem.indexOf(homes["alice"]!);
        assert.match(aliceSystem.slice(home - 40, home), /persistent file-based memory at `$/);
        // The rendered prompt's tokens before that point: maple-tiny's template opens with the system turn.
        const tokenize = await maple.post("/tokenize", { content: `<|im_start|>system\n${aliceSystem.slice(0, home)}`, add_special: true }, { "x-api-key": "sk-ant-maple" });
        const shared = (await tokenize.json() as { count: number }).count;

        assert.equal((await runClaude(proxy, homes["carol"]!, "Echo the marker.", exchanges)).trim(), `The command printed ${marker}.`);
        const carol = firstTurnOf(homes["carol"]!);
        // A sliding-window model's saved states cannot be cut back to that point: the second
        // developer's session saved one there, which the third one's restores.
        assert.ok(carol.usage!.cache_read_input_tokens >= shared - 4, `${JSON.stringify(carol.usage)}; the prompts share ${shared} tokens`);
        t.diagnostic(`the third developer's first prompt: ${promptTokens(carol.usage)} tokens, ${carol.usage!.cache_read_input_tokens} read from the cache; `
            + `the developers' prompts share ${shared} tokens (their system prompts part at character ${home} of ${aliceSystem.length}, before the tools)`);
    });
});

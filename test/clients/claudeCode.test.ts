import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { exact as exactly } from "../helpers/grammar.js";
import { parseSse } from "../helpers/sse.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";

/**
 * Claude Code (`@anthropic-ai/claude-code`, a native binary: it runs here although its package
 * declares Node ≥ 22) in print mode against a real Maple server, with its real system prompt, tool
 * list, thinking, cache_control and anthropic-beta headers. Between the two sits a pass-through
 * proxy that only adds Maple's `grammar` to each /v1/messages body (Claude Code has no way to send
 * one), so the random-weight model answers exactly: first a Bash tool call, which Claude Code runs,
 * then, once the tool's result is back, a final text.
 */

const claude = new URL("../../../node_modules/.bin/claude", import.meta.url).pathname;
const marker = "maple-tool-ok";
const toolCallTurn = exactly(`I will run it.\n</think>\n\n<tool_call>\n{"name": "Bash", "arguments": {"command": "echo ${marker}", "description": "Print a marker"}}\n</tool_call>`);
const finalTurn = exactly(`The command ran.\n</think>\n\nThe command printed ${marker}.`);

interface Exchange {
    path: string;
    headers: IncomingMessage["headers"];
    body: { messages?: { role: string; content: unknown }[]; system?: unknown; tools?: unknown[]; thinking?: unknown; stream?: boolean; [key: string]: unknown };
    status: number;
    usage?: { input_tokens: number; cache_read_input_tokens: number };
}

async function readBody(request: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
}

/** Forwards every request to Maple; a /v1/messages body gets the grammar of the turn it is. */
function grammarProxy(maple: TestServer, exchanges: Exchange[]): Server {
    return createServer((request, response) => {
        void (async () => {
            const path = request.url ?? "/";
            const body = JSON.parse(await readBody(request) || "{}") as Exchange["body"];
            const isMessages = path.split("?")[0] === "/v1/messages";
            const lastTurn = JSON.stringify(body.messages?.at(-1) ?? "");
            const sent = isMessages ? { ...body, grammar: lastTurn.includes("tool_result") ? finalTurn : toolCallTurn } : body;
            const headers = Object.fromEntries(Object.entries(request.headers)
                .filter(([name]) => !["host", "content-length", "accept-encoding", "connection"].includes(name))) as Record<string, string>;
            const answer = await fetch(`${maple.url}${path}`, { method: request.method ?? "POST", headers, body: JSON.stringify(sent) });
            const text = await answer.text();
            const exchange: Exchange = { path, headers: request.headers, body, status: answer.status };
            const delta = answer.headers.get("content-type")?.startsWith("text/event-stream") === true
                ? parseSse(text).find((event) => event.event === "message_delta") : undefined;
            if (delta !== undefined) exchange.usage = (JSON.parse(delta.data) as { usage: Exchange["usage"] }).usage;
            exchanges.push(exchange);
            response.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" });
            response.end(text);
        })().catch((error: unknown) => {
            response.writeHead(502);
            response.end(String(error));
        });
    });
}

describe("Claude Code (claude -p) against Maple", () => {
    let maple: TestServer;
    let proxy: Server;
    let home: string;
    const exchanges: Exchange[] = [];

    before(async () => {
        // Claude Code's system prompt and tools alone are over Maple's default 8192-token context.
        maple = await startTestServer({ parallel: 1, contextSize: 32768, maxNewTokensLimit: 512, apiKey: "sk-ant-maple" });
        proxy = grammarProxy(maple, exchanges);
        await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
        home = await mkdtemp(join(tmpdir(), "maple-claude-code-"));
    });
    after(async () => {
        await new Promise((resolve) => proxy.close(resolve));
        await maple.close();
        await rm(home, { recursive: true, force: true });
    });

    /** Runs `claude -p prompt` through the proxy and returns its output. */
    async function runClaude(prompt: string): Promise<string> {
        const { port } = proxy.address() as AddressInfo;
        const run = promisify(execFile)(claude, ["-p", prompt, "--allowedTools", "Bash"], {
            cwd: home,
            // A guard against a hang, not a timed assertion.
            timeout: 600_000,
            env: {
                PATH: process.env["PATH"], HOME: home,
                ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`, ANTHROPIC_API_KEY: "sk-ant-maple",
                DISABLE_TELEMETRY: "1", DISABLE_AUTOUPDATER: "1", DISABLE_ERROR_REPORTING: "1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1"
            }
        });
        // Print mode reads stdin too: closed at once, it has nothing to add.
        run.child.stdin?.end();
        const { stdout } = await run.catch((error: { stdout?: string; stderr?: string }) => {
            const seen = exchanges.map((exchange) => `${exchange.path} → ${exchange.status}`).join(", ");
            assert.fail(`claude -p failed; stdout: ${error.stdout ?? ""}; stderr: ${error.stderr ?? ""}; requests: ${seen}`);
        });
        return stdout;
    }
    const messageTurns = (): Exchange[] => exchanges.filter((exchange) => exchange.path.startsWith("/v1/messages") && !exchange.path.includes("count_tokens"));
    const total = (usage: Exchange["usage"]): number => usage!.input_tokens + usage!.cache_read_input_tokens;

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

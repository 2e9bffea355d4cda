import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
import { parseSse } from "./sse.js";
import type { TestServer } from "./testServer.js";

/**
 * Claude Code (`@anthropic-ai/claude-code`, a native binary: it runs here although its package
 * declares Node ≥ 22) in print mode against a real Maple server, through a pass-through proxy that
 * only adds Maple's `grammar` to each /v1/messages body (Claude Code has no way to send one), so
 * the random-weight model answers as the test scripts it.
 */
export const claudeBinary = new URL("../../../node_modules/.bin/claude", import.meta.url).pathname;

export interface ClaudeCodeBody {
    messages?: { role: string; content: unknown }[];
    system?: unknown;
    tools?: unknown[];
    thinking?: unknown;
    stream?: boolean;
    metadata?: { user_id?: string };
    [key: string]: unknown;
}

/** One request Claude Code made, Maple's status, and the final usage of a streamed /v1/messages answer. */
export interface Exchange {
    path: string;
    headers: IncomingMessage["headers"];
    body: ClaudeCodeBody;
    status: number;
    usage?: { input_tokens: number; cache_read_input_tokens: number };
}

async function readBody(request: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
}

/** Forwards every request to Maple, recording it in `exchanges`; a /v1/messages body gets the grammar `grammarFor` gives it. */
export function grammarProxy(maple: TestServer, exchanges: Exchange[], grammarFor: (body: ClaudeCodeBody) => string): Server {
    return createServer((request, response) => {
        void (async () => {
            const path = request.url ?? "/";
            const body = JSON.parse(await readBody(request) || "{}") as ClaudeCodeBody;
            const isMessages = path.split("?")[0] === "/v1/messages";
            const sent = isMessages ? { ...body, grammar: grammarFor(body) } : body;
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

/** Runs `claude -p prompt` (with `args`) in `home`, which is also its HOME, through the proxy, and returns its output. */
export async function runClaude(proxy: Server, home: string, prompt: string, exchanges: readonly Exchange[], args: readonly string[] = []): Promise<string> {
    const { port } = proxy.address() as AddressInfo;
    const run = promisify(execFile)(claudeBinary, ["-p", prompt, "--allowedTools", "Bash", ...args], {
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

/** The /v1/messages requests (not count_tokens), in the order Maple answered them. */
export function messageTurns(exchanges: readonly Exchange[]): Exchange[] {
    return exchanges.filter((exchange) => exchange.path.startsWith("/v1/messages") && !exchange.path.includes("count_tokens"));
}

/** A request's whole prompt: the tokens evaluated and those read from the cache. */
export function promptTokens(usage: Exchange["usage"]): number {
    return usage!.input_tokens + usage!.cache_read_input_tokens;
}

/** How many `tool_result` blocks the conversation holds: which request of its tool loop this is. */
export function toolResults(body: ClaudeCodeBody): number {
    return JSON.stringify(body.messages ?? []).split("\"tool_result\"").length - 1;
}

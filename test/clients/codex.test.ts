import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { exact } from "../helpers/grammar.js";

/**
 * The Codex CLI (`@openai/codex` 0.171.0, its Linux binary) runs `codex exec` with Maple as a
 * custom Responses provider. Codex sends what it always sends: a ~17 kB developer prompt, about
 * ten tools including a `namespace` of functions, `reasoning.summary`, `store: false`,
 * `include: ["reasoning.encrypted_content"]`, `prompt_cache_key` and `client_metadata`.
 * `web_search = "disabled"` in its config leaves out the hosted web_search tool, which Maple
 * refuses (400 naming the tool; the last test checks that answer). A loopback proxy adds Maple's
 * `grammar` field to Codex's request, so the random-weight model writes an exact reasoning and
 * answer; everything else is Codex's own request, and Maple's stream goes back to it unchanged.
 */

const codexLauncher = new URL("../../../node_modules/@openai/codex/bin/codex.js", import.meta.url).pathname;

interface Proxied {
    body: Record<string, unknown>;
    status: number;
}

/** Forwards POST bodies to Maple, adding `grammar` (from `next()`) to each. */
function grammarProxy(target: string, next: () => string | undefined, seen: Proxied[]): Promise<Server> {
    const proxy = createServer((incoming, outgoing) => {
        const chunks: Buffer[] = [];
        incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
        incoming.on("end", () => {
            const raw = Buffer.concat(chunks).toString("utf8");
            const body = raw === "" ? {} : JSON.parse(raw) as Record<string, unknown>;
            const grammar = next();
            const sent = JSON.stringify(grammar === undefined ? body : { ...body, grammar: exact(grammar) });
            const url = new URL(incoming.url ?? "/", target);
            const forward = httpRequest(url, {
                method: incoming.method, headers: { ...incoming.headers, host: url.host, "content-length": Buffer.byteLength(sent), "accept-encoding": "identity" }
            }, (answer) => {
                seen.push({ body, status: answer.statusCode ?? 0 });
                outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
                answer.pipe(outgoing);
            });
            forward.end(sent);
        });
    });
    return new Promise((resolve) => proxy.listen(0, "127.0.0.1", () => resolve(proxy)));
}

async function runCodex(baseUrl: string, home: string, prompt: string, extraConfig: string[] = []): Promise<{ code: number | null; stdout: string; stderr: string; lastMessage: string }> {
    const workdir = await mkdtemp(join(tmpdir(), "maple-codex-work-"));
    const lastMessageFile = join(workdir, "last-message.txt");
    const args = [
        codexLauncher, "exec", "--skip-git-repo-check", "--ephemeral", "--color", "never", "-o", lastMessageFile,
        "-c", "model_provider=maple",
        "-c", `model_providers.maple={ name = "maple", base_url = "${baseUrl}/v1", wire_api = "responses", env_key = "MAPLE_TEST_KEY", request_max_retries = 0, stream_max_retries = 0 }`,
        "-c", "web_search=\"disabled\"",
        ...extraConfig.flatMap((setting) => ["-c", setting]),
        "-m", "maple-preview", prompt
    ];
    const child = spawn(process.execPath, args, {
        cwd: workdir, stdio: ["ignore", "pipe", "pipe"],
        env: { PATH: process.env["PATH"], HOME: home, CODEX_HOME: home, MAPLE_TEST_KEY: "unused", RUST_LOG: "error" }
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => { stdout += chunk.toString(); });
    child.stderr.on("data", (chunk: Buffer) => { stderr += chunk.toString(); });
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    const lastMessage = await readFile(lastMessageFile, "utf8").catch(() => "");
    await rm(workdir, { recursive: true, force: true });
    return { code, stdout, stderr, lastMessage };
}

describe("Codex CLI (codex exec) client", () => {
    let server: TestServer;
    let proxy: Server;
    let home: string;
    let grammars: string[] = [];
    const seen: Proxied[] = [];

    before(async () => {
        // Codex's prompt is long: room for it, and one slot so its second turn finds the first's cache.
        server = await startTestServer({ contextSize: 16384, maxNewTokensLimit: 256, parallel: 1 });
        proxy = await grammarProxy(server.url, () => grammars.shift(), seen);
        home = await mkdtemp(join(tmpdir(), "maple-codex-home-"));
    });
    after(async () => {
        proxy.close();
        await server.close();
        await rm(home, { recursive: true, force: true });
    });

    it("completes a turn: streamed reasoning and answer, no protocol error", async () => {
        grammars = ["The user greets me.\n</think>\n\nHello from Maple."];
        const { port } = proxy.address() as AddressInfo;
        const result = await runCodex(`http://127.0.0.1:${port}`, home, "Say hello.");
        assert.equal(result.code, 0, `codex exited ${result.code}\n${result.stderr}\n${result.stdout}`);
        assert.equal(result.lastMessage.trim(), "Hello from Maple.", result.stderr);
        assert.doesNotMatch(result.stderr, /ERROR/, result.stderr);
        const request = seen.find((call) => call.body["input"] !== undefined)!;
        assert.equal(request.status, 200);
        assert.equal(request.body["store"], false);
        assert.equal(request.body["stream"], true);
        assert.deepEqual(request.body["include"], ["reasoning.encrypted_content"]);
        const types = new Set((request.body["tools"] as { type: string }[]).map((tool) => tool.type));
        assert.ok(types.has("function") && types.has("namespace"), [...types].join(", "));
    });

    it("without web_search disabled, Maple's 400 names the hosted tool, and Codex reports it", async () => {
        const { port } = proxy.address() as AddressInfo;
        const result = await runCodex(`http://127.0.0.1:${port}`, home, "Say hello.", ["web_search=\"cached\""]);
        assert.notEqual(result.code, 0);
        assert.match(result.stderr + result.stdout, /web_search/);
        assert.equal(seen.at(-1)!.status, 400);
    });
});

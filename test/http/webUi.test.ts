import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { gunzipSync, brotliDecompressSync } from "node:zlib";
import { after, before, describe, it } from "node:test";
import { webUiContentSecurityPolicy } from "../../src/http/routes/webUi.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";

/** What a browser sends for a page: `/` answers others (Ollama clients' probe) with Ollama's text line. */
const asBrowser = { headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8" } };

/** The page's hashed script and stylesheet, as index.html names them. */
async function assetPaths(server: TestServer): Promise<string[]> {
    const page = await (await server.request("/", asBrowser)).text();
    const paths = [...page.matchAll(/(?:src|href)="(assets\/[^"]+)"/g)].map((match) => `/${match[1]}`);
    assert.equal(paths.length, 2, `index.html names a script and a stylesheet: ${page}`);
    return paths;
}

// These need no model: the page is served while the model loads, so the servers never wait for it.
describe("the web chat at / (static files)", () => {
    let server: TestServer;
    const logLines: string[] = [];
    before(async () => {
        const logStream = new Writable({
            write(chunk: Buffer, _encoding, done) {
                logLines.push(...chunk.toString("utf8").split("\n").filter((line) => line !== ""));
                done();
            }
        });
        server = await startTestServer({ apiKey: "web-secret", logLevel: "info" }, { waitReady: false, logStream });
    });
    after(async () => server.close());

    it("serves the page with a strict Content-Security-Policy and no caching, without the API key", async () => {
        const response = await server.request("/", asBrowser);
        assert.equal(response.status, 200);
        assert.match(response.headers.get("content-type") ?? "", /^text\/html/);
        assert.equal(response.headers.get("content-security-policy"), webUiContentSecurityPolicy);
        assert.match(webUiContentSecurityPolicy, /script-src 'self'(;|$)/);
        assert.doesNotMatch(webUiContentSecurityPolicy, /unsafe-inline|unsafe-eval|\*/);
        assert.equal(response.headers.get("cache-control"), "no-cache");
        assert.equal(response.headers.get("x-content-type-options"), "nosniff");
        assert.match(await response.text(), /<div id="app">/);
        assert.equal((await server.request("/index.html")).status, 200);
    });

    it("serves hashed assets compressed (brotli or gzip, by Accept-Encoding) and cacheable for good", async () => {
        for (const path of await assetPaths(server)) {
            assert.match(path, /-[A-Z0-9]{8}\.(js|css)$/, "named by content hash");
            const plain = await server.request(path, { headers: { "accept-encoding": "identity" } });
            assert.equal(plain.status, 200);
            assert.equal(plain.headers.get("cache-control"), "public, max-age=31536000, immutable");
            assert.equal(plain.headers.get("content-encoding"), null);
            assert.match(plain.headers.get("vary") ?? "", /accept-encoding/i);
            const original = Buffer.from(await plain.arrayBuffer());

            // fetch would decode the body itself; node:http-level bytes show what was sent.
            for (const [encoding, decode] of [["br", brotliDecompressSync], ["gzip", gunzipSync]] as const) {
                const response = await fetchRaw(`${server.url}${path}`, encoding);
                assert.equal(response.headers["content-encoding"], encoding);
                assert.ok(response.body.length < original.length / 2, `${encoding} is smaller: ${response.body.length} vs ${original.length}`);
                assert.deepEqual(decode(response.body), original);
            }
        }
    });

    it("keeps the API behind the key, and unknown paths Maple's JSON 404", async () => {
        assert.equal((await server.request("/v1/models")).status, 401);
        const missing = await server.request("/nothing-here.js", { headers: { authorization: "Bearer web-secret" } });
        assert.equal(missing.status, 404);
        assert.equal(((await missing.json()) as { error: { code: string } }).error.code, "unknown_route");
    });

    it("prints the web chat's address at start-up", () => {
        const line = logLines.map((text) => JSON.parse(text) as { msg?: string; url?: string }).find((entry) => entry.msg === "web chat");
        assert.equal(line?.url, `${server.url}/`);
    });
});

describe("MAPLE_WEBUI=false", () => {
    it("serves no page at /: the API only (and Ollama's probe line)", async () => {
        const server = await startTestServer({ webUi: false }, { waitReady: false });
        try {
            const response = await server.request("/", asBrowser);
            assert.equal(response.status, 200);
            assert.match(response.headers.get("content-type") ?? "", /^text\/plain/);
            assert.equal(await response.text(), "Ollama is running");
            const asset = await server.request("/index.html", asBrowser);
            assert.equal(asset.status, 404);
            assert.equal(((await asset.json()) as { error: { code: string } }).error.code, "unknown_route");
            assert.equal((await server.request("/health")).headers.get("content-type")?.startsWith("application/json"), true);
        } finally {
            await server.close();
        }
    });
});

async function fetchRaw(url: string, encoding: string): Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }> {
    const { request } = await import("node:http");
    return new Promise((resolve, reject) => {
        request(url, { headers: { "accept-encoding": encoding } }, (response) => {
            const chunks: Buffer[] = [];
            response.on("data", (chunk: Buffer) => chunks.push(chunk));
            response.on("end", () => resolve({ headers: response.headers, body: Buffer.concat(chunks) }));
            response.on("error", reject);
        }).on("error", reject).end();
    });
}

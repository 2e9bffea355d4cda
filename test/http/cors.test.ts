import assert from "node:assert/strict";
import { describe, it } from "node:test";
import OpenAI from "openai";
import { Exposition } from "../helpers/prometheus.js";
import { startTestServer, type WireError } from "../helpers/testServer.js";

const origin = "https://app.example.com";

/** Request headers a browser sends without a preflight's permission (the Fetch standard's CORS-safelisted ones, JSON's content-type excepted). */
const safelisted = new Set(["accept", "accept-language", "content-language"]);

/**
 * The headers the official openai SDK puts on a chat request, read off a real request it makes:
 * what a browser lists in the preflight's Access-Control-Request-Headers (lowercase, sorted).
 */
async function openaiSdkRequestHeaders(baseURL: string): Promise<string[]> {
    let seen: Headers | undefined;
    const client = new OpenAI({
        baseURL, apiKey: "k", maxRetries: 0, dangerouslyAllowBrowser: true,
        fetch: async (url, init) => {
            seen = new Headers(init?.headers);
            return fetch(url, init);
        }
    });
    await client.chat.completions.create({ model: "maple-preview", messages: [{ role: "user", content: "x" }], max_tokens: 1 });
    assert.ok(seen !== undefined);
    return [...seen.keys()].filter((name) => !safelisted.has(name)).sort();
}

describe("CORS", () => {
    it("is off unless configured: no CORS headers", async () => {
        const server = await startTestServer();
        try {
            const response = await server.request("/v1/models", { headers: { origin } });
            assert.equal(response.status, 200);
            assert.equal(response.headers.get("access-control-allow-origin"), null);
            const preflight = await server.request("/v1/chat/completions", { method: "OPTIONS", headers: { origin, "access-control-request-method": "POST" } });
            assert.equal(preflight.headers.get("access-control-allow-origin"), null);
        } finally {
            await server.close();
        }
    });

    it("with MAPLE_CORS_ORIGIN: allowed origins get the headers, preflights pass without the key, others get none", async () => {
        const server = await startTestServer({ corsOrigins: [origin], apiKey: "k" });
        try {
            const preflight = await server.request("/v1/chat/completions", {
                method: "OPTIONS", headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type" }
            });
            assert.equal(preflight.status, 204);
            assert.equal(preflight.headers.get("access-control-allow-origin"), origin);
            assert.match(preflight.headers.get("access-control-allow-headers") ?? "", /authorization/);
            const allowed = await server.request("/v1/models", { headers: { origin, authorization: "Bearer k" } });
            assert.equal(allowed.status, 200);
            assert.equal(allowed.headers.get("access-control-allow-origin"), origin);
            const unauthorized = await server.request("/v1/models", { headers: { origin } });
            assert.equal(unauthorized.status, 401);
            const other = await server.request("/v1/models", { headers: { origin: "https://evil.example.com", authorization: "Bearer k" } });
            assert.equal(other.headers.get("access-control-allow-origin"), null);
        } finally {
            await server.close();
        }
    });

    it("lets the openai SDK through a real preflight, and exposes Retry-After to the page", async () => {
        const server = await startTestServer({ corsOrigins: [origin], apiKey: "k" });
        try {
            const requested = await openaiSdkRequestHeaders(`${server.url}/v1`);
            assert.ok(requested.includes("x-stainless-os") && requested.includes("authorization"), requested.join());
            const preflight = await server.request("/v1/chat/completions", {
                method: "OPTIONS", headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": requested.join(",") }
            });
            assert.equal(preflight.status, 204);
            assert.equal(preflight.headers.get("access-control-allow-origin"), origin);
            const allowed = (preflight.headers.get("access-control-allow-headers") ?? "").split(",").map((name) => name.trim().toLowerCase());
            for (const name of requested) assert.ok(allowed.includes(name), `preflight allows ${name}: ${allowed.join()}`);
            // The answer depends on what was asked, so caches must key on it.
            assert.match(preflight.headers.get("vary") ?? "", /access-control-request-headers/i);

            // A page reads an error's body and Retry-After only if the response carries CORS headers and exposes it.
            for (const response of [
                await server.request("/v1/models", { headers: { origin } }),
                await server.request("/v1/models", { headers: { origin, authorization: "Bearer k" } })
            ]) {
                assert.equal(response.headers.get("access-control-allow-origin"), origin, `status ${response.status}`);
                const exposed = (response.headers.get("access-control-expose-headers") ?? "").split(",").map((name) => name.trim().toLowerCase());
                for (const name of ["retry-after", "retry-after-ms", "x-ratelimit-remaining-requests"]) assert.ok(exposed.includes(name), `exposes ${name}`);
            }
        } finally {
            await server.close();
        }
    });
});

describe("CSRF: a web page cannot make a local Maple generate", () => {
    // A page on any origin may post a form, or fetch() with a CORS-safelisted content type,
    // to http://127.0.0.1:8080 without a preflight and without Maple's consent; the browser only
    // hides the answer. Such a body (text/plain can hold a whole JSON document) must be refused
    // before anything runs: that is the 415 for every Content-Type but application/json.
    it("refuses the bodies a browser sends cross-origin without a preflight with 415, running nothing", async () => {
        const server = await startTestServer();
        try {
            const body = JSON.stringify({ prompt: "x", max_tokens: 4, messages: [{ role: "user", content: "x" }] });
            for (const path of ["/v1/completions", "/v1/chat/completions", "/completions", "/tokenize"]) {
                for (const contentType of ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
                    const response = await server.request(path, { method: "POST", headers: { "content-type": contentType, origin: "https://evil.example.com" }, body });
                    assert.equal(response.status, 415, `${path} as ${contentType}`);
                    assert.equal((await response.json() as WireError).error.code, "unsupported_media_type");
                }
            }
            const metrics = new Exposition(await (await server.request("/metrics")).text());
            assert.equal(metrics.value("maple:prompt_tokens_total"), 0, "no prompt reached the engine");
            // The same body as application/json (which a cross-origin page can send only after a preflight that CORS answers) is served.
            assert.equal((await server.post("/v1/completions", body)).status, 200);
        } finally {
            await server.close();
        }
    });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { startTestServer } from "../helpers/testServer.js";

const origin = "https://app.example.com";

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
});

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI, { AuthenticationError } from "openai";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";

const apiKey = "sk-maple-test-3f9a";
const completionBody = { prompt: "x", max_tokens: 8, grammar: "root ::= \"authorized\"" };

async function assertUnauthorized(response: Response): Promise<void> {
    assert.equal(response.status, 401);
    assert.match(response.headers.get("content-type") ?? "", /application\/json/);
    const body = await response.json() as WireError;
    assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
    assert.equal(body.error.type, "authentication_error");
    assert.ok(body.error.message.length > 0);
    assert.ok(!body.error.message.includes(apiKey), "the error never echoes the key");
}

describe("MAPLE_API_KEY", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ apiKey });
    });
    after(async () => server.close());

    it("answers 401 in OpenAI shape when the bearer token is missing", async () => {
        await assertUnauthorized(await server.post("/v1/completions", completionBody));
        await assertUnauthorized(await server.request("/v1/models"));
        await assertUnauthorized(await server.request("/v1/models/maple-preview"));
    });

    it("answers 401 for a wrong bearer token, a wrong scheme and a key that only shares a prefix", async () => {
        for (const authorization of ["Bearer wrong-key", `Basic ${apiKey}`, `Bearer ${apiKey.slice(0, -1)}`, `Bearer ${apiKey}x`, "Bearer ", apiKey]) {
            await assertUnauthorized(await server.post("/v1/completions", completionBody, { authorization }));
        }
        await assertUnauthorized(await server.request("/v1/models", { headers: { authorization: "Bearer nope" } }));
    });

    it("rejects a wrong key as the openai SDK's AuthenticationError", async () => {
        const wrong = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "sk-wrong", maxRetries: 0 });
        await assert.rejects(wrong.models.list(), (error: unknown) => error instanceof AuthenticationError && error.status === 401);
    });

    it("serves the right key: the openai SDK with apiKey, and a raw bearer header", async () => {
        assert.equal(server.client.apiKey, apiKey);
        const params = { model: "maple-preview", prompt: "x", max_tokens: 8 };
        const completion = await server.client.completions.create({ ...params, grammar: "root ::= \"authorized\"" } as typeof params);
        assert.equal(completion.choices[0]!.text, "authorized");
        const models = await server.client.models.list();
        assert.equal(models.data.length, 1);

        const raw = await server.post("/v1/completions", completionBody, { authorization: `Bearer ${apiKey}` });
        assert.equal(raw.status, 200);
    });

    it("accepts the key as X-Api-Key (Anthropic clients, gateways), with the same checks", async () => {
        const models = await server.request("/v1/models", { headers: { "x-api-key": apiKey } });
        assert.equal(models.status, 200);
        const completion = await server.post("/v1/completions", completionBody, { "X-Api-Key": apiKey });
        assert.equal(completion.status, 200);
        for (const key of ["wrong-key", apiKey.slice(0, -1), `${apiKey}x`, "", `Bearer ${apiKey}`]) {
            await assertUnauthorized(await server.post("/v1/completions", completionBody, { "x-api-key": key }));
        }
        // Either header may carry it: a client that sends both (one of them stale) still gets in.
        const both = await server.request("/v1/models", { headers: { "x-api-key": "stale", authorization: `Bearer ${apiKey}` } });
        assert.equal(both.status, 200);
        const bothReversed = await server.request("/v1/models", { headers: { "x-api-key": apiKey, authorization: "Bearer stale" } });
        assert.equal(bothReversed.status, 200);
    });

    it("leaves /health open without a key", async () => {
        const response = await server.request("/health");
        assert.equal(response.status, 200);
        assert.equal((await response.json() as { status: string }).status, "ok");
        const withQuery = await server.request("/health?probe=1");
        assert.equal(withQuery.status, 200);
    });

    it("answers an unknown route with 404 in OpenAI shape", async () => {
        for (const [method, path] of [["GET", "/v1/nope"], ["POST", "/v1/engines/davinci/completions"], ["DELETE", "/v1/models/maple-preview"]] as const) {
            const response = await server.request(path, { method, headers: { authorization: `Bearer ${apiKey}` } });
            assert.equal(response.status, 404, `${method} ${path}`);
            const body = await response.json() as WireError;
            assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
            assert.equal(body.error.type, "not_found_error");
            assert.ok(body.error.message.includes(path), body.error.message);
        }
    });
});

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { NotFoundError } from "openai";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";
import { exact } from "../helpers/grammar.js";

const modelId = "maple-under-test";
/** `grammar` is Maple's (llama.cpp's) extension field; the SDK sends extra fields as they are. */
const withGrammar = <T extends object>(params: T, text: string): T => ({ ...params, grammar: exact(text) });

interface WireModel {
    id: string;
    object: string;
    created: number;
    owned_by: string;
}

function assertWireError(body: unknown, type: string): WireError["error"] {
    const error = (body as WireError).error;
    assert.equal(typeof error, "object");
    assert.deepEqual(Object.keys(error).sort(), ["code", "message", "param", "type"]);
    assert.equal(error.type, type);
    assert.ok(error.message.length > 0);
    return error;
}

describe("GET /v1/models and /v1/models/{id}", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ modelId });
    });
    after(async () => server.close());

    it("lists exactly one model: MAPLE_MODEL_ID, owned by deepgrove", async () => {
        const response = await server.request("/v1/models");
        assert.equal(response.status, 200);
        const body = await response.json() as { object: string; data: WireModel[] };
        assert.equal(body.object, "list");
        assert.equal(body.data.length, 1);
        const [model] = body.data;
        assert.equal(model!.id, modelId);
        assert.equal(model!.object, "model");
        assert.equal(model!.owned_by, "deepgrove");
        assert.ok(Number.isInteger(model!.created) && model!.created > 1_600_000_000);
    });

    it("is what the openai SDK lists and retrieves", async () => {
        const models = [];
        for await (const model of server.client.models.list()) models.push(model);
        assert.deepEqual(models.map((model) => [model.id, model.owned_by]), [[modelId, "deepgrove"]]);
        const retrieved = await server.client.models.retrieve(modelId);
        assert.equal(retrieved.id, modelId);
        assert.equal(retrieved.object, "model");
        assert.equal(retrieved.owned_by, "deepgrove");
    });

    it("answers GET /v1/models/{id} for the served id and 404 in OpenAI shape for another", async () => {
        const found = await server.request(`/v1/models/${modelId}`);
        assert.equal(found.status, 200);
        assert.equal((await found.json() as WireModel).id, modelId);

        const missing = await server.request("/v1/models/gpt-4o");
        assert.equal(missing.status, 404);
        assert.match(missing.headers.get("content-type") ?? "", /application\/json/);
        const error = assertWireError(await missing.json(), "not_found_error");
        assert.match(error.message, /gpt-4o/);

        await assert.rejects(server.client.models.retrieve("maple-preview"),
            (error: unknown) => error instanceof NotFoundError && error.status === 404);
    });

    it("answers an unknown route with 404 in OpenAI shape", async () => {
        const response = await server.request("/v1/model");
        assert.equal(response.status, 404);
        const error = assertWireError(await response.json(), "not_found_error");
        assert.match(error.message, /\/v1\/model\b/);
    });

    it("without MAPLE_STRICT_MODEL serves a request naming another model and echoes that name", async () => {
        const response = await server.post("/v1/completions", { model: "some-other-model", prompt: "x", max_tokens: 8, grammar: exact("ok") });
        assert.equal(response.status, 200);
        const body = await response.json() as { model: string; choices: { text: string }[] };
        assert.equal(body.model, "some-other-model");
        assert.equal(body.choices[0]!.text, "ok");
    });
});

describe("MAPLE_STRICT_MODEL=true", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ modelId, strictModel: true });
    });
    after(async () => server.close());

    it("answers 404 in OpenAI shape when /v1/completions names another model", async () => {
        const response = await server.post("/v1/completions", { model: "maple-preview", prompt: "x", max_tokens: 8, grammar: exact("ok") });
        assert.equal(response.status, 404);
        const error = assertWireError(await response.json(), "not_found_error");
        assert.equal(error.param, "model");
        assert.equal(error.code, "model_not_found");
        assert.match(error.message, /maple-preview/);

        await assert.rejects(server.client.completions.create({ model: "gpt-3.5-turbo-instruct", prompt: "x", max_tokens: 4 }),
            (error: unknown) => error instanceof NotFoundError && error.status === 404);
    });

    it("answers 200 for the served model id", async () => {
        const completion = await server.client.completions.create(withGrammar({ model: modelId, prompt: "x", max_tokens: 16 }, "strict ok"));
        assert.equal(completion.model, modelId);
        assert.equal(completion.choices[0]!.text, "strict ok");

        const unnamed = await server.post("/v1/completions", { prompt: "x", max_tokens: 8, grammar: exact("ok") });
        assert.equal(unnamed.status, 200, "a request that names no model is served");
        assert.equal((await unnamed.json() as { model: string }).model, modelId);
    });
});

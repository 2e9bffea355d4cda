import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { GenerationRequest } from "../../src/engine/types.js";
import { Ollama } from "ollama";
import { exact as exactly } from "../helpers/grammar.js";
import { longGrammar, startHeldStream } from "../helpers/longGeneration.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { readHealth, waitForHealth } from "../helpers/waitFor.js";

/** Ollama's wire itself, without a client: NDJSON lines, the final object, statuses and error bodies. */

interface Chunk {
    model: string;
    created_at: string;
    message?: { role: string; content: string; thinking?: string };
    response?: string;
    done: boolean;
    done_reason?: string;
    total_duration?: number;
    load_duration?: number;
    prompt_eval_count?: number;
    prompt_eval_duration?: number;
    eval_count?: number;
    eval_duration?: number;
}

/** The body's lines, each parsed: a line that is not one JSON object fails the test. */
async function readLines(response: Response): Promise<Chunk[]> {
    const text = await response.text();
    assert.ok(text.endsWith("\n"), "the stream ends with a newline");
    return text.slice(0, -1).split("\n").map((line) => {
        const value = JSON.parse(line) as Chunk;
        assert.ok(value !== null && typeof value === "object" && !Array.isArray(value), line);
        return value;
    });
}

describe("Ollama's wire (NDJSON, errors, probes)", () => {
    let server: TestServer;
    const started: GenerationRequest[] = [];

    before(async () => {
        server = await startTestServer({ parallel: 1, maxPromptTokens: 200 });
        const state = server.host.state;
        if (state.status !== "ready") throw new Error("not ready");
        const generateOnSlot = state.engine.generateOnSlot.bind(state.engine);
        state.engine.generateOnSlot = (slot, request) => {
            started.push(request);
            return generateOnSlot(slot, request);
        };
    });
    after(async () => server.close());

    it("/api/chat streams one object per line, done only on the last, with plausible counts and durations", async () => {
        const before = performance.now();
        const response = await server.post("/api/chat", {
            model: "maple-preview", messages: [{ role: "user", content: "Hi" }], grammar: exactly("Think.\n</think>\n\nHello there, friend!")
        });
        assert.equal(response.status, 200);
        assert.equal(response.headers.get("content-type"), "application/x-ndjson");
        const lines = await readLines(response);
        const elapsedNs = (performance.now() - before) * 1e6;
        assert.ok(lines.length > 3);
        assert.deepEqual(lines.slice(0, -1).map((line) => line.done), lines.slice(0, -1).map(() => false));
        for (const line of lines) {
            assert.equal(line.model, "maple-preview");
            assert.ok(!Number.isNaN(Date.parse(line.created_at)), line.created_at);
            assert.equal(line.message?.role, "assistant");
        }
        assert.equal(lines.map((line) => line.message?.thinking ?? "").join(""), "Think.");
        assert.equal(lines.map((line) => line.message?.content ?? "").join(""), "Hello there, friend!");
        const last = lines.at(-1)!;
        assert.equal(last.done, true);
        assert.equal(last.done_reason, "stop");
        const { total_duration: total = 0, load_duration: load = 0, prompt_eval_duration: promptEval = 0, eval_duration: evaluation = 0 } = last;
        assert.ok(last.prompt_eval_count! > 5 && last.eval_count! > 5, JSON.stringify(last));
        assert.ok(promptEval > 0 && evaluation > 0 && load > 0, JSON.stringify(last));
        // Nanoseconds: the parts add up to at most the whole, and the whole to at most what the client saw.
        assert.ok(load + promptEval + evaluation <= total + 3 && total <= elapsedNs, JSON.stringify(last));
    });

    it("stream: false answers one JSON object equal to the stream folded; num_predict ends it with done_reason length", async () => {
        const response = await server.post("/api/chat", {
            model: "maple-preview", stream: false, messages: [{ role: "user", content: "Hi" }], think: false,
            options: { num_predict: 3 }, grammar: "root ::= \"a\"{50}"
        });
        assert.equal(response.status, 200);
        assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
        const body = await response.json() as Chunk;
        assert.equal(body.done, true);
        assert.equal(body.done_reason, "length");
        assert.equal(body.eval_count, 3);
        assert.match(body.message?.content ?? "", /^a+$/);
    });

    it("logprobs: each token's logprob and its top alternatives, gathered in the stream: false answer", async () => {
        const response = await server.post("/api/chat", {
            model: "maple-preview", stream: false, messages: [{ role: "user", content: "Hi" }], think: false, logprobs: true, top_logprobs: 2, grammar: exactly("yes indeed")
        });
        const body = await response.json() as Chunk & { logprobs?: { token: string; logprob: number; bytes: number[]; top_logprobs?: unknown[] }[] };
        assert.equal(body.message?.content, "yes indeed");
        const logprobs = body.logprobs ?? [];
        assert.ok(logprobs.length >= 2, JSON.stringify(body));
        assert.equal(logprobs.map((entry) => entry.token).join("").trim(), "yes indeed");
        for (const entry of logprobs) {
            assert.ok(entry.logprob <= 0 && entry.bytes.length > 0);
            assert.ok((entry.top_logprobs?.length ?? 0) <= 2);
        }
    });

    it("/api/generate streams `response` pieces; an empty prompt only loads", async () => {
        const lines = await readLines(await server.post("/api/generate", { model: "maple-preview", prompt: "Say", raw: true, grammar: exactly("raw text") }));
        assert.equal(lines.map((line) => line.response).join(""), "raw text");
        assert.equal(lines.at(-1)!.done, true);
        // One JSON object, as Ollama answers it (not a stream).
        const loaded = await (await server.post("/api/generate", { model: "maple-preview" })).json() as Chunk;
        assert.equal(loaded.done, true);
        assert.equal(loaded.done_reason, "load");
    });

    it("a client that leaves mid-stream cancels its generation and frees the slot", async () => {
        const controller = new AbortController();
        const response = await server.request("/api/chat", {
            method: "POST", body: JSON.stringify({ model: "maple-preview", messages: [{ role: "user", content: "Go" }], options: { num_predict: 1000 }, grammar: longGrammar }),
            signal: controller.signal
        });
        const reader = response.body!.getReader();
        assert.ok(!(await reader.read()).done, "a first line arrived");
        assert.equal((await readHealth(server)).active, 1);
        const generation = started.at(-1)!;
        controller.abort();
        await waitForHealth(server, (health) => health.active === 0, "the slot to free after the client left");
        assert.ok(generation.signal.aborted, "the engine's generation was cancelled, not left to finish");
    });

    it("a body sent as curl -d sends it (form-urlencoded) is read as JSON, as Ollama does", async () => {
        const response = await server.request("/api/chat", {
            method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" },
            body: JSON.stringify({ model: "maple-preview", stream: false, messages: [{ role: "user", content: "Hi" }], think: false, grammar: exactly("ok") })
        });
        assert.equal(response.status, 200);
        assert.equal((await response.json() as Chunk).message?.content, "ok");
    });

    const badRequests: [string, string, unknown, RegExp][] = [
        ["a wrong type", "/api/chat", { model: "maple-preview", messages: "hello" }, /messages/],
        ["a wrong option type", "/api/chat", { model: "maple-preview", messages: [], options: { top_k: "many" } }, /options\.top_k/],
        ["an unknown role", "/api/chat", { model: "maple-preview", messages: [{ role: "wizard", content: "hi" }] }, /role must be one of/],
        ["images in a message", "/api/chat", { model: "maple-preview", messages: [{ role: "user", content: "see", images: ["aGk="] }] }, /text only/],
        ["no model", "/api/chat", { messages: [{ role: "user", content: "hi" }] }, /model is required/],
        ["a bad think value", "/api/chat", { model: "maple-preview", messages: [], think: "very" }, /think must be/],
        ["a format that is neither json nor a schema", "/api/chat", { model: "maple-preview", messages: [], format: "yaml" }, /format must be/],
        ["a too-long prompt", "/api/chat", { model: "maple-preview", messages: [{ role: "user", content: "word ".repeat(400) }] }, /prompt|context|tokens/i],
        ["images in generate", "/api/generate", { model: "maple-preview", prompt: "see", images: ["aGk="] }, /text only/],
        ["a suffix", "/api/generate", { model: "maple-preview", prompt: "def f(", suffix: "return x" }, /suffix/],
        ["raw with system", "/api/generate", { model: "maple-preview", prompt: "x", raw: true, system: "s" }, /raw mode/],
        ["a body that is not JSON", "/api/chat", "{not json", /JSON/],
        ["show without a model", "/api/show", {}, /model is required/],
        ["a pull of a path on the server", "/api/pull", { model: "/etc/passwd" }, /not a model to fetch/],
        ["a pull of an unknown name", "/api/pull", { model: "llama3.2", stream: false }, /not a model to fetch/],
        ["a copy (not served)", "/api/copy", { source: "a", destination: "b" }, /does not copy/]
    ];
    for (const [what, path, body, message] of badRequests) {
        it(`400 in Ollama's shape for ${what}`, async () => {
            const response = await server.post(path, body);
            assert.equal(response.status, 400);
            assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
            const error = await response.json() as Record<string, unknown>;
            assert.deepEqual(Object.keys(error), ["error"]);
            assert.match(error["error"] as string, message);
        });
    }

    it("DELETE /api/delete without a model is a 400, an unknown /api route a 404, both in Ollama's shape", async () => {
        const deleted = await server.request("/api/delete", { method: "DELETE", headers: { "content-type": "application/json" }, body: "{}" });
        assert.equal(deleted.status, 400);
        assert.match((await deleted.json() as { error: string }).error, /model is required/);
        for (const [method, path] of [["POST", "/api/unknown"], ["GET", "/api/chat"], ["POST", "/api/tags"]] as const) {
            const response = await server.request(path, { method, ...(method === "POST" ? { body: "{}" } : {}) });
            assert.equal(response.status, 404, `${method} ${path}`);
            assert.deepEqual(Object.keys(await response.json() as object), ["error"], `${method} ${path}`);
        }
    });

    it("the routes Maple does not serve answer a 400 that says what it does instead", async () => {
        for (const path of ["/api/create", "/api/copy", "/api/push", "/api/embed", "/api/embeddings"]) {
            const response = await server.post(path, { model: "maple-preview" });
            assert.equal(response.status, 400, path);
            assert.match((await response.json() as { error: string }).error, /Maple|embedding/, path);
        }
    });

    it("GET / and HEAD / answer Ollama's probe in text/plain; a browser asking for HTML gets the web chat", async () => {
        const probe = await server.request("/");
        assert.equal(probe.status, 200);
        assert.match(probe.headers.get("content-type") ?? "", /^text\/plain/);
        assert.equal(await probe.text(), "Ollama is running");
        const head = await server.request("/", { method: "HEAD" });
        assert.equal(head.status, 200);
        const page = await server.request("/", { headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8" } });
        assert.equal(page.status, 200);
        assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
    });
});

describe("Ollama's routes with MAPLE_STRICT_MODEL and an API key", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ strictModel: true, apiKey: "secret" });
    });
    after(async () => server.close());

    it("accepts the served id with or without :latest, 404s another name, 401s without the key", async () => {
        const auth = { authorization: "Bearer secret" };
        for (const model of ["maple-preview", "maple-preview:latest"]) {
            const response = await server.post("/api/chat", { model, stream: false, messages: [{ role: "user", content: "Hi" }], think: false, grammar: exactly("ok") }, auth);
            assert.equal(response.status, 200, model);
        }
        const other = await server.post("/api/chat", { model: "llama3.2", messages: [] }, auth);
        assert.equal(other.status, 404);
        assert.match((await other.json() as { error: string }).error, /llama3\.2/);
        const show = await server.post("/api/show", { model: "llama3.2" }, auth);
        assert.equal(show.status, 404);
        const anonymous = await server.request("/api/tags");
        assert.equal(anonymous.status, 401);
        assert.deepEqual(Object.keys(await anonymous.json() as object), ["error"]);
    });
});

describe("MAPLE_OLLAMA_PORT: a second listener", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ ollamaPort: 0 });
    });
    after(async () => server.close());

    it("serves the same app on the second port: Ollama's routes, the probe, and one /health load", async () => {
        assert.ok(server.ollamaUrl !== undefined && server.ollamaUrl !== server.url);
        const ollama = new Ollama({ host: server.ollamaUrl });
        assert.equal((await ollama.list()).models[0]!.name, "maple-preview:latest");
        assert.equal(await (await fetch(`${server.ollamaUrl}/`)).text(), "Ollama is running");
        const health = await (await fetch(`${server.ollamaUrl}/health`)).json() as { status: string };
        assert.equal(health.status, "ok");
    });
});

describe("Ollama's routes when the queue is full", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ parallel: 1, maxQueueDepth: 0 });
    });
    after(async () => server.close());

    it("answers 503 in Ollama's shape with Retry-After, before any byte of a stream", async () => {
        const held = await startHeldStream(server);
        try {
            const response = await server.post("/api/chat", { model: "maple-preview", messages: [{ role: "user", content: "Hi" }] });
            assert.equal(response.status, 503);
            assert.equal(response.headers.get("retry-after"), "5");
            const body = await response.json() as Record<string, unknown>;
            assert.deepEqual(Object.keys(body), ["error"]);
            assert.match(body["error"] as string, /busy/);
        } finally {
            held.abort();
        }
        await waitForHealth(server, (health) => health.active === 0, "the held slot to free");
    });
});

describe("an error after the stream began", () => {
    it("ends the NDJSON stream with one {\"error\"} line (the server shutting down mid-generation)", async () => {
        const server = await startTestServer({ parallel: 1 });
        let closing: Promise<void> | undefined;
        try {
            const response = await server.post("/api/chat", { model: "maple-preview", messages: [{ role: "user", content: "Go" }], options: { num_predict: 1000 }, grammar: longGrammar });
            assert.equal(response.status, 200);
            const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
            let text = "";
            while (!text.includes("\n")) {
                const chunk = await reader.read();
                assert.ok(!chunk.done, "a first line arrived");
                text += chunk.value;
            }
            closing = server.close({ graceMs: 0 });
            for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += chunk.value;
            const lines = text.trimEnd().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
            assert.deepEqual(Object.keys(lines.at(-1)!), ["error"]);
            assert.match(lines.at(-1)!["error"] as string, /shutting down/i);
            assert.ok(lines.slice(0, -1).every((line) => line["done"] === false), "no done object before the error");
        } finally {
            await (closing ?? server.close());
        }
    });
});

/**
 * The HTTP edge under hostile input, property-based (fast-check) against a live server on
 * maple-tiny: thousands of generated bodies (malformed and truncated JSON, wrong content types,
 * deep nesting, invalid UTF-8, lone surrogates, NUL bytes, wrong types and out-of-range numbers in
 * every field, absurd conversations, tools, grammars, prompts) and paths, on OpenAI's routes,
 * Anthropic's /v1/messages and the Responses API. Every answer must be a 2xx, or a 4xx in the
 * route's exact error shape without internals (Anthropic's `{"type":"error","error":{type,message}}`
 * on /v1/messages, OpenAI's elsewhere); never a 5xx, never an in-band error in a 200 stream. After
 * each property the server still answers /health and a valid request of each API with the exact
 * text its grammar forces.
 *
 * A failure prints fast-check's seed and path; replay it with FUZZ_SEED=<seed>.
 */
import assert from "node:assert/strict";
import { isUtf8 } from "node:buffer";
import { once } from "node:events";
import { connect } from "node:net";
import { after, before, describe, it, type TestContext } from "node:test";
import fc from "fast-check";
import { maxJsonDepth } from "../../src/http/jsonBody.js";
import { webUiPaths } from "../../src/http/routes/webUi.js";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";
import {
    chatFields, completionFields, damage, hasLoneSurrogate, messagesFields, mutatedBody, nested, oddText, ollamaFields, promptPastContext, responsesFields,
    textDamage, toJsonText, vocabularySize
} from "./wireArbitraries.js";
import { exact } from "../helpers/grammar.js";
import { parseSse } from "../helpers/sse.js";

/** Statuses a client may get for its own input (401 only with a key, which this server has none of). */
const clientStatuses = new Set([200, 400, 401, 404, 413, 415]);

/** The server's body limit here: small, so a 413 is cheap, and large enough for 10k messages. */
const maxBodyBytes = 1024 * 1024;

/** Generous: every valid body here generates at most 4 tokens. */
const unansweredAfterMs = 60_000;

if (process.env.FUZZ_SEED !== undefined) fc.configureGlobal({ seed: Number(process.env.FUZZ_SEED) });

interface FuzzRequest {
    method?: string;
    path: string;
    body?: string | Uint8Array;
    /** undefined: application/json; null: no Content-Type header at all. */
    contentType?: string | null;
}

interface Answer {
    status: number;
    contentType: string;
    text: string;
}

/** Exactly OpenAI's error shape, without internals; returns the error. */
function assertErrorShape(text: string, context: string): WireError["error"] {
    const body = JSON.parse(text) as WireError;
    assert.deepEqual(Object.keys(body), ["error"], `only 'error' at the top: ${context}`);
    const error = body.error;
    assert.deepEqual(Object.keys(error).sort(), ["code", "message", "param", "type"], `OpenAI's error fields: ${context}`);
    assert.equal(typeof error.message, "string", context);
    assert.ok(error.message.length > 0, context);
    assert.equal(typeof error.type, "string", context);
    assert.ok(error.param === null || typeof error.param === "string", context);
    assert.ok(error.code === null || typeof error.code === "string", context);
    assert.ok(!text.includes("/work/") && !text.includes("node_modules") && !text.includes("    at "), `no file paths or stack frames: ${context}`);
    return error;
}

/** Anthropic's error types (src/anthropic/errorFormat.ts). */
const anthropicErrorTypes = new Set(["invalid_request_error", "authentication_error", "not_found_error", "request_too_large", "api_error", "overloaded_error"]);

/** An error as both shapes carry it: its type and message (OpenAI's also has param and code). */
interface ShapedError {
    type: string;
    message: string;
    param?: string | null;
    code?: string | null;
}

/** Exactly Anthropic's error shape, without internals; returns the error. */
function assertAnthropicErrorShape(text: string, context: string): ShapedError {
    const body = JSON.parse(text) as { type: string; error: ShapedError };
    assert.deepEqual(Object.keys(body).sort(), ["error", "type"], `only 'type' and 'error' at the top: ${context}`);
    assert.equal(body.type, "error", context);
    const error = body.error;
    assert.deepEqual(Object.keys(error).sort(), ["message", "type"], `Anthropic's error fields: ${context}`);
    assert.equal(typeof error.message, "string", context);
    assert.ok(error.message.length > 0, context);
    assert.ok(anthropicErrorTypes.has(error.type), `one of Anthropic's error types: ${context}`);
    assert.ok(!text.includes("/work/") && !text.includes("node_modules") && !text.includes("    at "), `no file paths or stack frames: ${context}`);
    return error;
}

/** Which API a route speaks: its error shape and what its 200s look like. */
type WireFormat = "openai" | "anthropic" | "responses";

function formatOf(path: string): WireFormat {
    if (path.startsWith("/v1/messages")) return "anthropic";
    return path.startsWith("/v1/responses") ? "responses" : "openai";
}

let rawSent = 0;

/** Writes raw bytes to the server and reads until it closes: for what fetch cannot send. */
async function rawExchange(url: string, request: string): Promise<{ status: number; body: string }> {
    rawSent += 1;
    const { port } = new URL(url);
    const socket = connect(Number(port), "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", () => undefined);
    socket.write(request);
    await once(socket, "close");
    const text = Buffer.concat(chunks).toString("utf8");
    const split = text.indexOf("\r\n\r\n");
    return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), body: text.slice(split + 4) };
}

/** application/json, in any case, with no charset or UTF-8's (RFC 8259: JSON is UTF-8). */
function isJsonType(type: string | null): boolean {
    if (type === null) return false;
    const [mediaType, ...parameters] = type.toLowerCase().split(";").map((part) => part.trim());
    const charset = parameters.find((parameter) => parameter.startsWith("charset="))?.slice("charset=".length);
    return mediaType === "application/json" && (charset === undefined || charset === "utf-8" || charset === "utf8");
}

const completionBase = { prompt: "Hi", max_tokens: 2 };
const chatBase = { messages: [{ role: "user", content: "Hi" }], max_tokens: 2 };
const messagesBase = { model: "maple-preview", messages: [{ role: "user", content: "Hi" }], max_tokens: 2 };
const responsesBase = { input: "Hi", max_output_tokens: 2 };
const webChatPaths = new Set(webUiPaths({ webUi: true }));

describe("hostile requests against a live server (fuzz)", () => {
    let server: TestServer;
    let sent = 0;
    const statuses = new Map<number, number>();
    const started = Date.now();

    before(async () => {
        // Valid bodies end after at most 4 tokens whatever they ask for.
        server = await startTestServer({ maxBodyBytes, maxNewTokensLimit: 4 });
    });
    after(async () => {
        await server?.close();
    });

    async function send(request: FuzzRequest): Promise<Answer> {
        sent += 1;
        const headers: Record<string, string> = {};
        if (request.contentType !== null) headers["content-type"] = request.contentType ?? "application/json";
        // A string body would get fetch's own text/plain Content-Type; bytes get none.
        const body = typeof request.body === "string" ? Buffer.from(request.body, "utf8") : request.body;
        // A hang guard, not a timing assertion: a request left unanswered fails here rather than stalling the suite.
        const response = await server.request(request.path, { method: request.method ?? "POST", headers, body, signal: AbortSignal.timeout(unansweredAfterMs) });
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        return { status: response.status, contentType: response.headers.get("content-type") ?? "", text: await response.text() };
    }

    /** The contract for every answer to client input, in `format`'s shapes. Returns the error, if it was one. */
    function checkAnswer(answer: Answer, what: string): WireError["error"] | undefined;
    function checkAnswer(answer: Answer, what: string, format: WireFormat): ShapedError | undefined;
    function checkAnswer(answer: Answer, what: string, format: WireFormat = "openai"): ShapedError | undefined {
        const context = `${what} → ${answer.status} ${answer.text.slice(0, 300)}`;
        assert.ok(clientStatuses.has(answer.status), `a status for client input: ${context}`);
        if (answer.status === 200 && format !== "openai") {
            checkNamedEventAnswer(answer, format, context);
            return undefined;
        }
        if (answer.status === 200) {
            if (answer.contentType.startsWith("text/event-stream")) {
                const events = parseSse(answer.text).map((event) => event.data);
                assert.equal(events.at(-1), "[DONE]", `a stream ends with [DONE]: ${context}`);
                for (const event of events.slice(0, -1)) {
                    assert.ok(!("error" in (JSON.parse(event) as object)), `no in-band error in a stream: ${context}`);
                }
            } else {
                assert.ok(!("error" in (JSON.parse(answer.text) as object)), `a 200 is no error: ${context}`);
            }
            return undefined;
        }
        assert.match(answer.contentType, /^application\/json/, context);
        return format === "anthropic" ? assertAnthropicErrorShape(answer.text, context) : assertErrorShape(answer.text, context);
    }

    /** A 200 of /v1/messages or /v1/responses: a whole object that is no error, or a named-event stream that ends as it should. */
    function checkNamedEventAnswer(answer: Answer, format: "anthropic" | "responses", context: string): void {
        if (!answer.contentType.startsWith("text/event-stream")) {
            const body = JSON.parse(answer.text) as { type?: string; error?: unknown; status?: string };
            assert.ok(format === "anthropic" ? !("error" in body) && body.type !== "error" : body.error == null && body.status !== "failed", `a 200 is no error: ${context}`);
            return;
        }
        const events = parseSse(answer.text);
        assert.ok(events.length > 0, context);
        for (const event of events) {
            assert.ok(event.event !== undefined, `every event is named: ${context}`);
            assert.equal((JSON.parse(event.data) as { type: string }).type, event.event, `an event's name is its type: ${context}`);
        }
        const names = events.map((event) => event.event);
        assert.ok(!names.includes("error") && !names.includes("response.failed"), `no in-band error in a stream: ${context}`);
        const ends = format === "anthropic" ? ["message_stop"] : ["response.completed", "response.incomplete"];
        assert.ok(ends.includes(names.at(-1)!), `the stream ends with ${ends.join(" or ")}: ${context}`);
    }

    /** The same contract on Ollama's routes: a 200 (NDJSON lines or one object, none an error) or a 4xx `{"error": "…"}`. */
    function checkOllamaAnswer(answer: Answer, what: string): void {
        const context = `${what} → ${answer.status} ${answer.text.slice(0, 300)}`;
        assert.ok(clientStatuses.has(answer.status), `a status for client input: ${context}`);
        if (answer.status === 200) {
            if (!answer.contentType.startsWith("application/")) return;
            for (const line of answer.text.split("\n").filter((text) => text !== "")) {
                assert.ok(!("error" in (JSON.parse(line) as object)), `no in-band error in a 200: ${context}`);
            }
            return;
        }
        assert.match(answer.contentType, /^application\/json/, context);
        const error = JSON.parse(answer.text) as Record<string, unknown>;
        assert.deepEqual(Object.keys(error), ["error"], `Ollama's shape: ${context}`);
        assert.ok(typeof error["error"] === "string" && error["error"] !== "", context);
        assert.ok(!answer.text.includes("/work/") && !answer.text.includes("    at "), `no file paths or stack frames: ${context}`);
    }

    async function post(path: string, body: string | Uint8Array, contentType?: string | null): Promise<WireError["error"] | undefined> {
        const answer = await send({ path, body, contentType });
        const shown = typeof body === "string" ? body : Buffer.from(body).toString("latin1");
        return checkAnswer(answer, `POST ${path} ${shown.slice(0, 200)}`);
    }

    /** POST to /v1/messages or /v1/responses (or their token counters), checked in that route's shapes. */
    async function postTo(path: string, body: string | Uint8Array, contentType?: string | null): Promise<{ answer: Answer; error: ShapedError | undefined }> {
        const answer = await send({ path, body, contentType });
        const shown = typeof body === "string" ? body : Buffer.from(body).toString("latin1");
        return { answer, error: checkAnswer(answer, `POST ${path} ${shown.slice(0, 200)}`, formatOf(path)) };
    }

    /** The server still serves: /health, and a valid request of each kind with its exact text. */
    async function assertStillServing(t: TestContext, property: string, runsBefore: number, startedAt: number): Promise<void> {
        const health = await server.request("/health");
        assert.equal(health.status, 200);
        assert.equal((await health.json() as { status: string }).status, "ok");
        // At most 4 characters: the server caps every generation at 4 tokens.
        const completion = await server.post("/v1/completions", { prompt: "Say it:", max_tokens: 4, grammar: exact("ok") });
        assert.equal(completion.status, 200);
        assert.equal((await completion.json() as { choices: { text: string }[] }).choices[0]!.text, "ok");
        const chat = await server.post("/v1/chat/completions", {
            messages: [{ role: "user", content: "Say it." }], chat_template_kwargs: { enable_thinking: false }, max_tokens: 4, grammar: exact("yes")
        });
        assert.equal(chat.status, 200);
        assert.equal((await chat.json() as { choices: { message: { content: string } }[] }).choices[0]!.message.content, "yes");
        const message = await server.post("/v1/messages", { ...messagesBase, thinking: { type: "disabled" }, max_tokens: 4, grammar: exact("sure") });
        assert.equal(message.status, 200);
        assert.deepEqual((await message.json() as { content: { type: string; text?: string }[] }).content, [{ type: "text", text: "sure" }]);
        const response = await server.post("/v1/responses", { ...responsesBase, reasoning: { effort: "none" }, max_output_tokens: 4, grammar: exact("fine") });
        assert.equal(response.status, 200);
        assert.equal((await response.json() as { output_text: string }).output_text, "fine");
        t.diagnostic(`${property}: ${sent - runsBefore} requests in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
    }

    /** Runs one property, then checks the server still serves. */
    async function fuzz<T>(t: TestContext, name: string, arbitrary: fc.Arbitrary<T>, numRuns: number,
        check: (value: T) => Promise<void>): Promise<void> {
        const runsBefore = sent;
        const startedAt = Date.now();
        await fc.assert(fc.asyncProperty(arbitrary, check), { numRuns, includeErrorInReport: true });
        await assertStillServing(t, name, runsBefore, startedAt);
    }

    const generationPaths = fc.constantFrom("/v1/completions", "/v1/chat/completions");

    it("completions bodies with wrong types and out-of-range numbers in every field", async (t) => {
        await fuzz(t, "completions fields", mutatedBody(completionBase, completionFields), 1500, async (body) => {
            const error = await post("/v1/completions", toJsonText(body));
            if (hasLoneSurrogate(body)) assert.equal(error?.type, "invalid_request_error", "a lone surrogate is refused");
        });
    });

    it("chat bodies with wrong types, absurd conversations, tools, tool_choice and template kwargs", async (t) => {
        await fuzz(t, "chat fields", mutatedBody(chatBase, chatFields), 2500, async (body) => {
            const error = await post("/v1/chat/completions", toJsonText(body));
            if (hasLoneSurrogate(body)) assert.equal(error?.type, "invalid_request_error", "a lone surrogate is refused");
        });
    });

    it("Ollama's /api/chat and /api/generate bodies: a 200 (NDJSON lines without errors) or a 4xx in Ollama's shape", async (t) => {
        const route = fc.constantFrom("/api/chat", "/api/generate");
        const base = { model: "maple-preview", messages: [{ role: "user", content: "Hi" }], prompt: "Hi", options: { num_predict: 2 } };
        await fuzz(t, "ollama fields", fc.tuple(route, mutatedBody(base, ollamaFields)), 1200, async ([path, body]) => {
            checkOllamaAnswer(await send({ path, body: toJsonText(body) }), `POST ${path} ${toJsonText(body).slice(0, 200)}`);
        });
    });

    it("malformed, truncated and corrupted JSON text: invalid UTF-8, raw NUL bytes, stray escapes", async (t) => {
        const bodies = fc.oneof(mutatedBody(completionBase, completionFields, 2), mutatedBody(chatBase, chatFields, 2));
        await fuzz(t, "damaged JSON text", fc.tuple(generationPaths, bodies, textDamage), 1000, async ([path, body, hurt]) => {
            const bytes = damage(toJsonText(body), hurt);
            const error = await post(path, bytes);
            if (!isUtf8(bytes)) {
                assert.equal(error?.param, "body", "invalid UTF-8 is refused as the body");
            }
        });
    });

    it("random text and bytes as bodies, non-object JSON, and wrong content types", async (t) => {
        const bodyText = fc.oneof(
            fc.json({ maxDepth: 3 }),
            fc.string({ maxLength: 60 }),
            fc.string({ unit: "binary", maxLength: 60 }),
            fc.uint8Array({ maxLength: 60 }),
            fc.constantFrom("", " ", "null", "true", "0", "\"prompt\"", "[]", "[{}]", "{", "}", "{}", "{\"prompt\":\"Hi\"", "\ufeff{}")
        );
        const contentType = fc.oneof(
            { weight: 3, arbitrary: fc.constant(undefined) },
            {
                weight: 2, arbitrary: fc.constantFrom<string | null>(null, "text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
                    "multipart/form-data; boundary=x", "application/xml", "application/json; charset=latin1", "application/json; charset=utf-16",
                    "application/json; charset=UTF-8", "APPLICATION/JSON", "application/jsonl", "application/json-patch+json", "*/*",
                    "application/octet-stream", "application/problem+json")
            },
            { weight: 1, arbitrary: fc.stringMatching(/^[a-z]{1,8}\/[a-z0-9+.-]{1,12}$/) }
        );
        await fuzz(t, "bodies and content types", fc.tuple(generationPaths, bodyText, contentType), 800, async ([path, body, type]) => {
            const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
            const answer = await send({ path, body: bytes, contentType: type });
            const error = checkAnswer(answer, `POST ${path} [${type}] ${Buffer.from(bytes).toString("latin1").slice(0, 200)}`);
            if (bytes.length === 0 || type === undefined) return;
            if (isJsonType(type)) {
                assert.notEqual(answer.status, 415, `${type} is JSON`);
            } else {
                assert.equal(answer.status, 415, `a body that is not UTF-8 JSON is refused by its type (${type})`);
                assert.equal(error?.param, "Content-Type");
            }
        });
    });

    it("deep nesting anywhere in the body", async (t) => {
        const where = fc.constantFrom<(inner: string) => string>(
            (inner) => inner,
            (inner) => `{"prompt":"Hi","max_tokens":2,"user":${inner}}`,
            (inner) => `{"prompt":${inner}}`,
            (inner) => `{"messages":[{"role":"user","content":"Hi"}],"chat_template_kwargs":{"x":${inner}}}`,
            (inner) => `{"messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"x":${inner}}}}]}`,
            (inner) => `{"messages":${inner}}`
        );
        const depth = fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 50_000 }), fc.constant(10_000));
        await fuzz(t, "deep nesting", fc.tuple(generationPaths, where, depth, fc.constantFrom("array" as const, "object" as const)), 100,
            async ([path, wrap, levels, kind]) => {
                const text = wrap(nested(levels, kind));
                const error = await post(path, text);
                if (levels > maxJsonDepth) assert.equal(error?.param, "body", `nesting ${levels} deep is refused as the body`);
            });
    });

    it("token-id prompts out of the vocabulary, negative or fractional, and batch prompts", async (t) => {
        const id = fc.oneof(fc.integer({ min: -3, max: vocabularySize + 3 }), fc.double({ min: -2, max: vocabularySize + 2, noNaN: true }));
        const prompt = fc.oneof(fc.array(id, { minLength: 1, maxLength: 6 }), fc.array(fc.array(id, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 3 }),
            fc.array(oddText, { minLength: 2, maxLength: 3 }));
        await fuzz(t, "token prompts", prompt, 300, async (value) => {
            const error = await post("/v1/completions", toJsonText({ prompt: value, max_tokens: 2 }));
            const flat = (value as unknown[]).flat();
            const batch = Array.isArray(value[0]) ? value.length > 1 : typeof value[0] === "string" && value.length > 1;
            const outside = flat.some((token) => typeof token === "number" && !(Number.isInteger(token) && token >= 0 && token < vocabularySize));
            if (batch || outside) assert.match(error?.param ?? "", /^prompt/, "a batch or an id outside the vocabulary is refused naming prompt");
        });
    });

    it("unknown routes and methods, odd model ids and query strings", async (t) => {
        const path = fc.oneof(
            fc.constantFrom("/", "/v1", "/v1/", "/v2/completions", "/v1/chat", "/v1/models/", "/health/", "/v1/engines", "//v1/models",
                "/v1/models/%E0%A4%A", "/v1/models/%00", "/v1/models/%ZZ", `/v1/models/${"x".repeat(500)}`, "/v1/models/maple-preview",
                "/health?verbose=%", "/v1/models?x[y]=1&x=2",
                "/api/tags", "/api/ps", "/api/version", "/api/show", "/api/delete", "/api/nope", "/api"),
            fc.webPath().map((webPath) => `/${webPath.replace(/^\/+/, "")}`),
            fc.string({ maxLength: 40 }).map((id) => `/v1/models/${encodeURIComponent(id)}`)
        );
        const method = fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD");
        await fuzz(t, "routes", fc.tuple(method, path, fc.option(fc.json({ maxDepth: 2 }), { nil: undefined })), 400, async ([verb, route, body]) => {
            const answer = await send({ method: verb, path: route, body: verb === "GET" || verb === "HEAD" ? undefined : body });
            if (verb === "HEAD") {
                assert.ok(clientStatuses.has(answer.status), `HEAD ${route} → ${answer.status}`);
                return;
            }
            // The path the server got: fetch resolves dot segments first ("/." is "/", "/a/../api" is "/api").
            const { pathname } = new URL(`http://127.0.0.1${route}`);
            // The web chat's page and assets are the one non-JSON answer (src/http/routes/webUi.ts).
            if (verb === "GET" && webChatPaths.has(pathname)) return assert.equal(answer.status, 200, `GET ${route}`);
            // Ollama's routes (and any other /api path) answer in Ollama's shape.
            if (/^\/api(\/|$)/.test(pathname)) return checkOllamaAnswer(answer, `${verb} ${route}`);
            checkAnswer(answer, `${verb} ${route}`);
        });
    });

    it("answers 413 in OpenAI's shape for a body over the limit, told or streamed", async (t) => {
        const runsBefore = sent;
        const startedAt = Date.now();
        const big = toJsonText({ prompt: "x".repeat(maxBodyBytes), max_tokens: 1 });
        const told = checkAnswer(await send({ path: "/v1/completions", body: big }), "a body over the limit");
        assert.equal(told?.code, "payload_too_large");
        sent += 1;
        const response = await server.request("/v1/chat/completions", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: new ReadableStream({
                start(controller) {
                    controller.enqueue(Buffer.from(big));
                    controller.close();
                }
            }),
            duplex: "half"
        } as RequestInit);
        const streamed = checkAnswer({ status: response.status, contentType: response.headers.get("content-type") ?? "", text: await response.text() },
            "a chunked body over the limit");
        assert.equal(response.status, 413);
        assert.equal(streamed?.code, "payload_too_large");
        await assertStillServing(t, "413", runsBefore, startedAt);
    });

    it("named hostile inputs get a 4xx naming their param", async (t) => {
        const runsBefore = sent;
        const startedAt = Date.now();
        const messages = (count: number): object[] => Array.from({ length: count }, (_, index) => ({ role: index % 2 === 0 ? "user" : "assistant", content: "x" }));
        const cases: [string, string, string | Uint8Array, number, string | null][] = [
            ["truncated JSON", "/v1/completions", "{\"prompt\": \"Hi\", \"max_to", 400, "body"],
            ["an empty body", "/v1/chat/completions", "", 400, "body"],
            ["a non-object body", "/v1/completions", "[\"Hi\"]", 400, "body"],
            ["invalid UTF-8", "/v1/completions", Buffer.concat([Buffer.from("{\"prompt\":\""), Buffer.from([0xc3, 0x28]), Buffer.from("\"}")]), 400, "body"],
            ["a lone surrogate", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"a\\ud800b\"}]}", 400, "messages[0].content"],
            ["a lone surrogate in a key", "/v1/completions", "{\"prompt\":\"Hi\",\"\\udc00\":1}", 400, "\udc00"],
            ["a raw NUL byte in a string", "/v1/completions", "{\"prompt\":\"a\u0000b\"}", 400, "body"],
            ["10k levels of nesting", "/v1/completions", nested(10_000, "array"), 400, "body"],
            ["__proto__ in the body", "/v1/completions", "{\"prompt\":\"Hi\",\"__proto__\":{\"x\":1}}", 400, "__proto__"],
            ["10k messages past the context", "/v1/chat/completions", JSON.stringify({ messages: messages(10_000), max_tokens: 1 }), 400, "messages"],
            ["an unknown role", "/v1/chat/completions", JSON.stringify({ messages: [{ role: "wizard", content: "x" }] }), 400, "messages[0].role"],
            ["a user message without content", "/v1/chat/completions", JSON.stringify({ messages: [{ role: "user" }] }), 400, "messages[0].content"],
            ["a tool message without a matching call", "/v1/chat/completions",
                JSON.stringify({ messages: [{ role: "user", content: "x" }, { role: "tool", tool_call_id: "nope", content: "r" }] }), 400, "messages[1].tool_call_id"],
            ["tool_calls arguments that are not JSON", "/v1/chat/completions", JSON.stringify({
                messages: [{ role: "user", content: "x" }, { role: "assistant", tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{" } }] }]
            }), 400, "messages[1].tool_calls[0].function.arguments"],
            ["tool parameters that are a list", "/v1/chat/completions",
                JSON.stringify({ messages: [{ role: "user", content: "x" }], tools: [{ type: "function", function: { name: "f", parameters: [] } }] }), 400, "tools[0].function.parameters"],
            ["a named tool_choice naming no offered tool", "/v1/chat/completions", JSON.stringify({
                messages: [{ role: "user", content: "x" }], tools: [{ type: "function", function: { name: "f" } }], tool_choice: { type: "function", function: { name: "g" } }
            }), 400, "tool_choice"],
            ["an invalid grammar", "/v1/completions", JSON.stringify({ prompt: "Hi", grammar: "root ::= (" }), 400, "grammar"],
            // Both used to end the process: no token can match, and llama.cpp's sampler threw where node-llama-cpp lost the error.
            ["a grammar with a reversed range", "/v1/completions", JSON.stringify({ prompt: "Hi", grammar: "root ::= [z-a]" }), 400, "grammar"],
            ["a grammar that needs U+0000", "/v1/chat/completions",
                JSON.stringify({ messages: [{ role: "user", content: "x" }], grammar: "root ::= \"ok\\x00\"" }), 400, "grammar"],
            ["a JSON schema whose const is U+0000", "/v1/chat/completions", JSON.stringify({
                messages: [{ role: "user", content: "x" }], response_format: { type: "json_schema", json_schema: { name: "a", schema: { const: "\u0000" } } }
            }), 400, "response_format.json_schema.schema"],
            ["a tool schema with a U+0000 property name", "/v1/chat/completions", JSON.stringify({
                messages: [{ role: "user", content: "x" }], tool_choice: "required",
                tools: [{ type: "function", function: { name: "f", parameters: { type: "object", properties: { "a\u0000": { type: "string" } }, required: ["a\u0000"] } } }]
            }), 400, "tools[0].function.parameters"],
            ["17 stop strings", "/v1/completions", JSON.stringify({ prompt: "Hi", stop: Array.from({ length: 17 }, (_, index) => `s${index}`) }), 400, "stop"],
            ["a token id past the vocabulary", "/v1/completions", JSON.stringify({ prompt: [1, vocabularySize] }), 400, "prompt"],
            ["a negative token id", "/v1/completions", JSON.stringify({ prompt: [-1] }), 400, "prompt"],
            ["a fractional token id", "/v1/completions", JSON.stringify({ prompt: [1.5] }), 400, "prompt[0]"],
            ["a prompt past the context", "/v1/completions", JSON.stringify({ prompt: promptPastContext }), 400, "prompt"],
            ["a batch of prompts", "/v1/completions", JSON.stringify({ prompt: ["a", "b"] }), 400, "prompt"],
            ["a batch of token lists", "/v1/completions", JSON.stringify({ prompt: [[1], [2]] }), 400, "prompt"],
            ["max_tokens -0", "/v1/completions", "{\"prompt\":\"Hi\",\"max_tokens\":-0}", 400, "max_tokens"],
            ["max_tokens 1e400 (Infinity)", "/v1/completions", "{\"prompt\":\"Hi\",\"max_tokens\":1e400}", 400, "max_tokens"],
            ["temperature as a string", "/v1/chat/completions", JSON.stringify({ messages: [{ role: "user", content: "x" }], temperature: "0.5" }), 400, "temperature"],
            ["top_k 1e308", "/v1/completions", JSON.stringify({ prompt: "Hi", top_k: 1e308 }), 400, "top_k"]
        ];
        for (const [name, path, body, status, param] of cases) {
            const error = await post(path, body);
            assert.equal(error?.type, "invalid_request_error", name);
            assert.deepEqual([status, error.param], [status, param], `${name}: ${error.message}`);
        }
        const wrongType = checkAnswer(await send({ path: "/v1/completions", body: "{\"prompt\":\"Hi\"}", contentType: "text/plain" }), "text/plain");
        assert.equal(wrongType?.code, "unsupported_media_type");
        const noType = checkAnswer(await send({ path: "/v1/completions", body: "{\"prompt\":\"Hi\"}", contentType: null }), "no Content-Type");
        assert.equal(noType?.code, "unsupported_media_type");
        // An escaped NUL is a character like any other: served.
        const nul = await send({ path: "/v1/completions", body: JSON.stringify({ prompt: "a\u0000b", max_tokens: 4, grammar: exact("ok") }) });
        assert.equal(nul.status, 200, nul.text);
        await assertStillServing(t, "named inputs", runsBefore, startedAt);
    });

    it("answers requests Node's HTTP parser refuses in OpenAI's shape: a garbled request line, oversized headers", async (t) => {
        const runsBefore = sent;
        const startedAt = Date.now();
        const rawBefore = rawSent;
        const garbled = await rawExchange(server.url, "GARBAGE\r\n\r\n");
        assert.equal(garbled.status, 400);
        assertErrorShape(garbled.body, "a garbled request line");
        const oversized = await rawExchange(server.url, `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
        assert.equal(oversized.status, 431);
        assertErrorShape(oversized.body, "oversized headers");
        const bareLf = await rawExchange(server.url, "POST /v1/completions HTTP/1.1\nHost: x\nContent-Length: 2\n\n{}");
        assert.ok(bareLf.status === 400 || bareLf.status === 415, `bare LF → ${bareLf.status}`);
        assertErrorShape(bareLf.body, "bare LF line ends");
        sent += rawSent - rawBefore;
        await assertStillServing(t, "HTTP parser errors", runsBefore, startedAt);
    });

    /** Half the bodies change only the fields that carry structure (conversation, tools, formats), where a parser reads deepest. */
    function mostlyStructure(base: Record<string, unknown>, fields: Record<string, fc.Arbitrary<unknown>>, structural: readonly string[]): fc.Arbitrary<Record<string, unknown>> {
        const picked = Object.fromEntries(structural.map((name) => [name, fields[name]!]));
        return fc.oneof(mutatedBody(base, fields), mutatedBody(base, picked, 2));
    }

    const messagesPaths = fc.constantFrom("/v1/messages", "/v1/messages", "/v1/messages/count_tokens");
    const responsesPaths = fc.constantFrom("/v1/responses", "/v1/responses", "/v1/responses/input_tokens");
    const namedEventPaths = fc.oneof(messagesPaths, responsesPaths);

    it("messages bodies with wrong types, absurd Anthropic conversations, content blocks, tools, tool_choice and thinking", async (t) => {
        await fuzz(t, "messages fields", fc.tuple(messagesPaths, mostlyStructure(messagesBase, messagesFields, ["messages", "system", "tools", "tool_choice", "thinking", "output_config"])), 2000, async ([path, body]) => {
            const { error } = await postTo(path, toJsonText(body));
            if (hasLoneSurrogate(body)) assert.equal(error?.type, "invalid_request_error", "a lone surrogate is refused");
        });
    });

    /** A stored response of this server: its id and its output items' ids, which valid continuations name. */
    async function storedResponse(): Promise<{ id: string; itemIds: string[] }> {
        const response = await server.post("/v1/responses", { input: "Store this.", reasoning: { effort: "none" }, max_output_tokens: 4, grammar: exact("kept") });
        assert.equal(response.status, 200, await response.clone().text());
        const body = await response.json() as { id: string; output: { id: string }[] };
        return { id: body.id, itemIds: body.output.map((item) => item.id) };
    }

    it("responses bodies with wrong types, every input item type, tools, namespaces, text formats and continuations", async (t) => {
        const stored = await storedResponse();
        const fields = responsesFields([stored.id], stored.itemIds);
        await fuzz(t, "responses fields", fc.tuple(responsesPaths, mostlyStructure(responsesBase, fields, ["input", "tools", "tool_choice", "text"])), 2000, async ([path, body]) => {
            const { error } = await postTo(path, toJsonText(body));
            if (hasLoneSurrogate(body)) assert.equal(error?.type, "invalid_request_error", "a lone surrogate is refused");
        });
    });

    it("malformed, truncated and corrupted JSON text on /v1/messages and /v1/responses", async (t) => {
        const stored = await storedResponse();
        const bodies = fc.oneof(mutatedBody(messagesBase, messagesFields, 2), mutatedBody(responsesBase, responsesFields([stored.id], stored.itemIds), 2));
        await fuzz(t, "damaged JSON text (messages, responses)", fc.tuple(namedEventPaths, bodies, textDamage), 800, async ([path, body, hurt]) => {
            const bytes = damage(toJsonText(body), hurt);
            const { error } = await postTo(path, bytes);
            if (!isUtf8(bytes)) assert.equal(error?.type, "invalid_request_error", "invalid UTF-8 is refused");
        });
    });

    it("random bodies, non-object JSON, deep nesting and wrong content types on /v1/messages and /v1/responses", async (t) => {
        const bodyText = fc.oneof(
            fc.json({ maxDepth: 3 }),
            fc.string({ maxLength: 60 }),
            fc.uint8Array({ maxLength: 60 }),
            fc.constantFrom("", " ", "null", "[]", "{", "{}", "{\"messages\":[]}", "{\"input\":[]}", "{\"max_tokens\":1}", "\ufeff{}"),
            fc.tuple(fc.constantFrom<(inner: string) => string>(
                (inner) => inner,
                (inner) => `{"messages":[{"role":"user","content":${inner}}],"max_tokens":1}`,
                (inner) => `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":1,"tools":[{"name":"f","input_schema":{"x":${inner}}}]}`,
                (inner) => `{"input":${inner}}`,
                (inner) => `{"input":"Hi","metadata":${inner}}`
            ), fc.oneof(fc.integer({ min: 1, max: 200 }), fc.constant(10_000)), fc.constantFrom("array" as const, "object" as const))
                .map(([wrap, levels, kind]) => wrap(nested(levels, kind)))
        );
        const contentType = fc.oneof(
            { weight: 3, arbitrary: fc.constant(undefined) },
            { weight: 1, arbitrary: fc.constantFrom<string | null>(null, "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", "APPLICATION/JSON") }
        );
        await fuzz(t, "bodies and content types (messages, responses)", fc.tuple(namedEventPaths, bodyText, contentType), 600, async ([path, body, type]) => {
            const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
            const { answer } = await postTo(path, bytes, type);
            if (bytes.length === 0 || type === undefined) return;
            if (isJsonType(type)) assert.notEqual(answer.status, 415, `${type} is JSON`);
            else assert.equal(answer.status, 415, `a body that is not UTF-8 JSON is refused by its type (${type})`);
        });
    });

    it("the Responses API's companion routes with odd ids, methods and list queries", async (t) => {
        const stored = await storedResponse();
        const id = fc.oneof(fc.constantFrom(stored.id, "resp_nope", "", "%00", "x".repeat(300)), fc.string({ maxLength: 20 }).map(encodeURIComponent));
        const query = fc.oneof(
            fc.constant(""),
            fc.record({
                limit: fc.oneof(fc.constantFrom("0", "1", "100", "101", "-1", "1.5", "abc", ""), fc.nat().map(String)),
                order: fc.constantFrom("asc", "desc", "up", ""),
                after: fc.constantFrom(...stored.itemIds, "msg_nope", "")
            }, { requiredKeys: [] }).map((fields) => `?${new URLSearchParams(fields).toString()}`)
        );
        const route = fc.constantFrom(["GET", ""], ["DELETE", ""], ["GET", "/input_items"], ["POST", "/cancel"]);
        await fuzz(t, "responses companion routes", fc.tuple(route, id, query), 300, async ([[method, tail], responseId, search]) => {
            const path = `/v1/responses/${responseId}${tail}${search}`;
            // Never the stored one: the later properties' continuations name it.
            if (method === "DELETE" && responseId === stored.id) return;
            const answer = await send({ method, path, body: method === "POST" ? "{}" : undefined });
            checkAnswer(answer, `${method} ${path}`, "responses");
        });
    });

    it("named hostile inputs on /v1/messages and /v1/responses get a 4xx in their route's shape", async (t) => {
        const runsBefore = sent;
        const startedAt = Date.now();
        const user = [{ role: "user", content: "x" }];
        const cases: [string, string, unknown, number, string][] = [
            ["messages: no max_tokens", "/v1/messages", { messages: user }, 400, "invalid_request_error"],
            ["messages: an empty conversation", "/v1/messages", { messages: [], max_tokens: 1 }, 400, "invalid_request_error"],
            ["messages: an assistant prefill", "/v1/messages", { messages: [...user, { role: "assistant", content: "y" }], max_tokens: 1 }, 400, "invalid_request_error"],
            ["messages: an image", "/v1/messages", { messages: [{ role: "user", content: [{ type: "image", source: {} }] }], max_tokens: 1 }, 400, "invalid_request_error"],
            ["messages: a server tool", "/v1/messages", { messages: user, max_tokens: 1, tools: [{ type: "web_search_20250305", name: "web_search" }] }, 400, "invalid_request_error"],
            ["messages: a budget past max_tokens", "/v1/messages", { messages: user, max_tokens: 2, thinking: { type: "enabled", budget_tokens: 2 } }, 400, "invalid_request_error"],
            ["messages: a prompt past the context", "/v1/messages", { messages: [{ role: "user", content: promptPastContext }], max_tokens: 1 }, 400, "invalid_request_error"],
            ["count_tokens: no messages", "/v1/messages/count_tokens", {}, 400, "invalid_request_error"],
            ["responses: no input", "/v1/responses", {}, 400, "invalid_request_error"],
            ["responses: background", "/v1/responses", { input: "x", background: true }, 400, "invalid_request_error"],
            ["responses: a hosted tool", "/v1/responses", { input: "x", tools: [{ type: "web_search" }] }, 400, "invalid_request_error"],
            ["responses: an unknown previous response", "/v1/responses", { input: "x", previous_response_id: "resp_nope" }, 404, "not_found_error"],
            ["responses: an unknown item reference", "/v1/responses", { input: [{ type: "item_reference", id: "msg_nope" }] }, 404, "not_found_error"],
            ["responses: a null tool in a namespace", "/v1/responses", { input: "x", tools: [{ type: "namespace", name: "ns", tools: [null] }] }, 400, "invalid_request_error"],
            ["responses: a null input item", "/v1/responses", { input: [null] }, 400, "invalid_request_error"],
            ["input_tokens: a prompt past the context", "/v1/responses/input_tokens", { input: promptPastContext.repeat(20) }, 400, "invalid_request_error"]
        ];
        for (const [name, path, body, status, type] of cases) {
            const { answer, error } = await postTo(path, JSON.stringify(body));
            assert.deepEqual([answer.status, error?.type], [status, type], `${name}: ${answer.text}`);
        }
        await assertStillServing(t, "named inputs (messages, responses)", runsBefore, startedAt);
    });

    it("counts", (t) => {
        const byStatus = [...statuses].sort(([a], [b]) => a - b).map(([status, count]) => `${status}: ${count}`).join(", ");
        t.diagnostic(`${sent} requests in ${((Date.now() - started) / 1000).toFixed(1)} s (${byStatus})`);
    });
});

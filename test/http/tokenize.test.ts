import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";
import { exact } from "../helpers/grammar.js";

interface Tokenized {
    tokens: number[];
    count: number;
    max_model_len: number;
}

interface Usage {
    prompt_tokens: number;
}

const conversation = [
    { role: "system", content: "You are terse." },
    { role: "user", content: "Say hello, please." }
];
const weatherTool = {
    type: "function",
    function: { name: "get_weather", description: "Weather in a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }
};

async function tokenize(server: TestServer, body: object): Promise<Tokenized> {
    const response = await server.post("/tokenize", body);
    assert.equal(response.status, 200, await response.clone().text());
    const result = await response.json() as Tokenized;
    assert.deepEqual(Object.keys(result).sort(), ["count", "max_model_len", "tokens"]);
    assert.equal(result.count, result.tokens.length);
    assert.ok(result.tokens.every((token) => Number.isInteger(token) && token >= 0));
    return result;
}

async function detokenize(server: TestServer, tokens: unknown): Promise<{ content: string; prompt: string }> {
    const response = await server.post("/detokenize", { tokens });
    assert.equal(response.status, 200, await response.clone().text());
    return await response.json() as { content: string; prompt: string };
}

async function assertBadRequest(response: Response, param: string | null): Promise<WireError["error"]> {
    assert.equal(response.status, 400);
    const { error } = await response.json() as WireError;
    assert.equal(error.type, "invalid_request_error");
    assert.equal(error.param, param);
    assert.ok(error.message.length > 0);
    return error;
}

describe("POST /tokenize and POST /detokenize", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer();
    });
    after(async () => server.close());

    it("counts `content` (llama-server) and `prompt` (vLLM) alike, as a completion counts its prompt_tokens", async () => {
        const text = "Say hello, world: <|im_start|> counts as one token.";
        const byContent = await tokenize(server, { content: text });
        const byPrompt = await tokenize(server, { prompt: text });
        assert.deepEqual(byPrompt, byContent);
        assert.equal(byContent.max_model_len, 1024, "the context size (startTestServer's 1024)");

        const completion = await server.post("/v1/completions", { prompt: text, max_tokens: 4, grammar: exact("ok") });
        assert.equal(completion.status, 200);
        assert.equal((await completion.json() as { usage: Usage }).usage.prompt_tokens, byContent.count);
    });

    it("renders `messages` through the model's template with the generation prompt, as a chat request's prompt_tokens", async () => {
        for (const extra of [{}, { tools: [weatherTool] }, { chat_template_kwargs: { enable_thinking: false } }]) {
            const tokenized = await tokenize(server, { messages: conversation, ...extra });
            const chat = await server.post("/v1/chat/completions", { messages: conversation, ...extra, max_tokens: 4, grammar: exact("hi") });
            assert.equal(chat.status, 200);
            assert.equal((await chat.json() as { usage: Usage }).usage.prompt_tokens, tokenized.count, JSON.stringify(extra));
        }
        const withTools = await tokenize(server, { messages: conversation, tools: [weatherTool] });
        const without = await tokenize(server, { messages: conversation });
        assert.ok(withTools.count > without.count, "the tools are rendered into the prompt");
    });

    it("leaves the assistant turn's opening out with add_generation_prompt: false", async () => {
        const withPrompt = await tokenize(server, { messages: conversation });
        const withoutPrompt = await tokenize(server, { messages: conversation, add_generation_prompt: false });
        assert.ok(withoutPrompt.count < withPrompt.count);
        assert.deepEqual(withPrompt.tokens.slice(0, withoutPrompt.count), withoutPrompt.tokens, "the conversation is a prefix of the prompt");
        const opening = await detokenize(server, withPrompt.tokens.slice(withoutPrompt.count));
        assert.match(opening.content, /assistant/);
    });

    it("reads special-token text as text with add_special: false (or vLLM's add_special_tokens: false)", async () => {
        const text = "<|im_start|>user";
        const special = await tokenize(server, { content: text });
        const plain = await tokenize(server, { content: text, add_special: false });
        assert.ok(plain.count > special.count, `<|im_start|> is one special token by default, several plain ones otherwise (${special.count} vs ${plain.count})`);
        assert.deepEqual(await tokenize(server, { prompt: text, add_special_tokens: false }), plain);
        assert.equal((await detokenize(server, plain.tokens)).content, text);
    });

    it("round-trips text through /detokenize, under both `content` and `prompt`", async () => {
        for (const text of ["hello world", "  Leading spaces, ünïcödé and an emoji 🍁\nnew line.", ""]) {
            const { tokens } = await tokenize(server, { content: text });
            const detokenized = await detokenize(server, tokens);
            assert.deepEqual(detokenized, { content: text, prompt: text });
        }
        const generated = await server.post("/v1/completions", { prompt: "x", max_tokens: 8, grammar: exact("round trip") });
        assert.equal((await generated.json() as { choices: { text: string }[] }).choices[0]!.text, "round trip");
        const { tokens } = await tokenize(server, { content: "round trip" });
        assert.equal((await detokenize(server, tokens)).prompt, "round trip");
    });

    it("answers 400 naming `tokens` for ids outside the vocabulary or not ids at all", async () => {
        const vocabularyEdge = await server.post("/detokenize", { tokens: [9707, 1_000_000_000] });
        assert.match((await assertBadRequest(vocabularyEdge, "tokens")).message, /1000000000/);
        await assertBadRequest(await server.post("/detokenize", { tokens: [-1] }), "tokens");
        await assertBadRequest(await server.post("/detokenize", { tokens: "hello" }), "tokens");
        await assertBadRequest(await server.post("/detokenize", { tokens: [1.5] }), "tokens[0]");
        await assertBadRequest(await server.post("/detokenize", {}), "tokens");
    });

    it("answers 400 for a missing, doubled or invalid input", async () => {
        await assertBadRequest(await server.post("/tokenize", {}), "content");
        await assertBadRequest(await server.post("/tokenize", { add_special: true }), "content");
        await assertBadRequest(await server.post("/tokenize", { content: "a", prompt: "b" }), "prompt");
        await assertBadRequest(await server.post("/tokenize", { prompt: "a", messages: conversation }), "messages");
        await assertBadRequest(await server.post("/tokenize", { content: 42 }), "content");
        await assertBadRequest(await server.post("/tokenize", { content: "a", add_special: "yes" }), "add_special");
        await assertBadRequest(await server.post("/tokenize", { messages: [] }), "messages");
        await assertBadRequest(await server.post("/tokenize", { messages: [{ role: "wizard", content: "hi" }] }), "messages[0].role");
        await assertBadRequest(await server.post("/tokenize", "[1, 2]"), "body");
    });
});

describe("POST /tokenize and /detokenize with MAPLE_API_KEY", () => {
    const apiKey = "sk-maple-tokenize-7c1e";
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ apiKey });
    });
    after(async () => server.close());

    it("answers 401 without the key and serves with it", async () => {
        for (const [path, body] of [["/tokenize", { content: "hello" }], ["/detokenize", { tokens: [9707] }]] as const) {
            const refused = await server.post(path, body);
            assert.equal(refused.status, 401);
            assert.equal((await refused.json() as WireError).error.type, "authentication_error");
            assert.equal((await server.post(path, body, { authorization: "Bearer wrong" })).status, 401);
            const served = await server.post(path, body, { authorization: `Bearer ${apiKey}` });
            assert.equal(served.status, 200);
        }
    });
});

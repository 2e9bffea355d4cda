import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";
import { exact } from "../helpers/grammar.js";
import { readSse } from "../helpers/sse.js";

/** `grammar` is Maple's (llama.cpp's) extension field; the SDK sends extra fields as they are. */
const withGrammar = <T extends object>(params: T, text: string): T => ({ ...params, grammar: exact(text) });

describe("POST /v1/completions", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ maxNewTokensLimit: 64, maxPromptTokens: 200 });
    });
    after(async () => server.close());

    it("generates the grammar's exact text through the openai SDK, with usage", async () => {
        const completion = await server.client.completions.create(
            withGrammar({ model: "maple-preview", prompt: "Say hello:", max_tokens: 16 }, "hello world"));
        assert.equal(completion.object, "text_completion");
        assert.match(completion.id, /^cmpl-/);
        assert.equal(completion.choices.length, 1);
        assert.equal(completion.choices[0]!.text, "hello world");
        assert.equal(completion.choices[0]!.finish_reason, "stop");
        assert.ok(completion.usage!.prompt_tokens >= 3);
        assert.ok(completion.usage!.completion_tokens >= 2);
        assert.equal(completion.usage!.total_tokens, completion.usage!.prompt_tokens + completion.usage!.completion_tokens);
    });

    it("streams OpenAI chunks, then usage with choices: [], then [DONE]", async () => {
        const stream = await server.client.completions.create(withGrammar({
            model: "maple-preview", prompt: "Say hello:", max_tokens: 16, stream: true as const, stream_options: { include_usage: true }
        }, "hello streaming world"));
        let text = "";
        const finishReasons: (string | null)[] = [];
        let usage: unknown;
        for await (const chunk of stream) {
            assert.equal(chunk.object, "text_completion");
            if (chunk.usage) {
                assert.deepEqual(chunk.choices, []);
                usage = chunk.usage;
                continue;
            }
            text += chunk.choices[0]!.text;
            finishReasons.push(chunk.choices[0]!.finish_reason);
        }
        assert.equal(text, "hello streaming world");
        assert.equal(finishReasons.at(-1), "stop");
        assert.ok(finishReasons.slice(0, -1).every((reason) => reason === null));
        assert.ok(usage !== undefined);

        const raw = await readSse(await server.post("/v1/completions", { prompt: "x", max_tokens: 4, stream: true, grammar: exact("ok") }));
        assert.equal(raw.at(-1), "[DONE]");
    });

    it("trims a stop string that spans several tokens, and reports it as matched_stop", async () => {
        const response = await server.post("/v1/completions", {
            prompt: "Count:", max_tokens: 32, stop: ["a be", "zzz"], grammar: exact("alpha beta gamma delta")
        });
        const body = await response.json() as { choices: { text: string; finish_reason: string; matched_stop: unknown }[] };
        assert.equal(response.status, 200);
        assert.equal(body.choices[0]!.text, "alph");
        assert.equal(body.choices[0]!.finish_reason, "stop");
        assert.equal(body.choices[0]!.matched_stop, "a be");

        const streamed = await readSse(await server.post("/v1/completions", {
            prompt: "Count:", max_tokens: 32, stop: "a be", stream: true, grammar: exact("alpha beta gamma delta")
        }));
        const text = streamed.filter((event): event is { choices: { text: string }[] } => typeof event === "object")
            .map((event) => event.choices[0]?.text ?? "").join("");
        assert.equal(text, "alph");
    });

    it("accepts a prompt of token ids and a one-element list", async () => {
        const byIds = await server.post("/v1/completions", { prompt: [9707, 11, 1879], max_tokens: 8, grammar: exact("ids ok") });
        assert.equal(byIds.status, 200);
        const body = await byIds.json() as { choices: { text: string }[]; usage: { prompt_tokens: number } };
        assert.equal(body.choices[0]!.text, "ids ok");
        assert.equal(body.usage.prompt_tokens, 3);
        const byList = await server.post("/v1/completions", { prompt: ["Hello"], max_tokens: 8, grammar: exact("list ok") });
        assert.equal(((await byList.json()) as { choices: { text: string }[] }).choices[0]!.text, "list ok");
    });

    it("decodes multi-byte characters split across byte-level tokens", async () => {
        const text = "naïve 日本語 😀🚀 ok";
        const response = await server.post("/v1/completions", { prompt: "Unicode:", max_tokens: 48, grammar: exact(text) });
        assert.equal(((await response.json()) as { choices: { text: string }[] }).choices[0]!.text, text);
        const streamed = await readSse(await server.post("/v1/completions", { prompt: "Unicode:", max_tokens: 48, stream: true, grammar: exact(text) }));
        const pieces = streamed.filter((event): event is { choices: { text: string }[] } => typeof event === "object")
            .map((event) => event.choices[0]?.text ?? "");
        assert.equal(pieces.join(""), text);
        assert.ok(pieces.every((piece) => !piece.includes("\uFFFD")), "no replacement characters in a valid text");
    });

    it("never fails on random byte-level output: free sampling at temperature 1.5", async () => {
        for (const seed of [1, 2, 3]) {
            const response = await server.post("/v1/completions", { prompt: "Random:", max_tokens: 48, temperature: 1.5, top_k: 0, top_p: 1, seed });
            assert.equal(response.status, 200);
            const body = await response.json() as { choices: { text: string }[]; usage: { completion_tokens: number } };
            assert.equal(typeof body.choices[0]!.text, "string");
            assert.ok(body.usage.completion_tokens > 0);
        }
    });

    it("ignore_eos generates exactly max_tokens, never stopping at an end-of-generation token", async () => {
        // <|im_end|> (151645) pushed up so far that the model ends at once without ignore_eos.
        const imEnd = 151645;
        const ended = await server.post("/v1/completions", { prompt: "x", max_tokens: 48, logit_bias: { [imEnd]: 100 }, seed: 1 });
        const endedBody = await ended.json() as { choices: { finish_reason: string; matched_stop: unknown }[]; usage: { completion_tokens: number } };
        assert.equal(endedBody.usage.completion_tokens, 0);
        assert.equal(endedBody.choices[0]!.matched_stop, imEnd);
        for (const seed of [1, 2]) {
            const response = await server.post("/v1/completions", { prompt: "x", max_tokens: 48, ignore_eos: true, logit_bias: { [imEnd]: 100 }, temperature: 1.5, seed });
            const body = await response.json() as { choices: { finish_reason: string }[]; usage: { completion_tokens: number } };
            assert.equal(body.usage.completion_tokens, 48);
            assert.equal(body.choices[0]!.finish_reason, "length");
        }
    });

    it("is reproducible with a seed, and greedy at temperature 0", async () => {
        const run = async (body: object): Promise<string> => {
            const response = await server.post("/v1/completions", { prompt: "Once upon a time", max_tokens: 12, ...body });
            return ((await response.json()) as { choices: { text: string }[] }).choices[0]!.text;
        };
        assert.equal(await run({ temperature: 1, seed: 42 }), await run({ temperature: 1, seed: 42 }));
        assert.equal(await run({ temperature: 0 }), await run({ temperature: 0, seed: 7 }));
    });

    it("accepts top_p: 0 (OpenAI's range is 0–1 inclusive) and samples greedily with it, at any temperature", async () => {
        const run = async (body: object): Promise<string> => {
            const response = await server.post("/v1/completions", { prompt: "Once upon a time", max_tokens: 12, ...body });
            assert.equal(response.status, 200, JSON.stringify(body));
            return ((await response.json()) as { choices: { text: string }[] }).choices[0]!.text;
        };
        const greedy = await run({ temperature: 0 });
        for (const seed of [1, 2, 3]) assert.equal(await run({ top_p: 0, temperature: 1.5, top_k: 0, seed }), greedy, `seed ${seed}`);
    });

    it("caps max_tokens at MAPLE_MAX_NEW_TOKENS_LIMIT and says length", async () => {
        const response = await server.post("/v1/completions", { prompt: "Go:", max_tokens: 100000, grammar: "root ::= \"a\"{500}" });
        const body = await response.json() as { choices: { finish_reason: string; text: string }[]; usage: { completion_tokens: number } };
        assert.equal(body.usage.completion_tokens, 64);
        assert.equal(body.choices[0]!.finish_reason, "length");
        assert.match(body.choices[0]!.text, /^a+$/);
    });

    it("refuses a prompt over MAPLE_MAX_PROMPT_TOKENS with context_length_exceeded", async () => {
        const response = await server.post("/v1/completions", { prompt: "word ".repeat(400), max_tokens: 4 });
        assert.equal(response.status, 400);
        const body = await response.json() as WireError;
        assert.equal(body.error.code, "context_length_exceeded");
        assert.equal(body.error.type, "invalid_request_error");
        assert.equal(body.error.param, "prompt");
    });

    it("refuses an absurdly long prompt before tokenizing it (special-token floods are slow to tokenize)", async () => {
        const response = await server.post("/v1/completions", { prompt: "<|im_end|>".repeat(10_000), max_tokens: 4 });
        assert.equal(response.status, 400);
        const body = await response.json() as WireError;
        assert.equal(body.error.code, "context_length_exceeded");
        assert.match(body.error.message, /characters/);
    });

    for (const [name, body, param] of [
        ["echo", { prompt: "x", echo: true }, "echo"],
        ["suffix", { prompt: "x", suffix: "y" }, "suffix"],
        ["logprobs over 5", { prompt: "x", logprobs: 6 }, "logprobs"],
        ["n beyond the slots", { prompt: "x", n: 99 }, "n"],
        ["batch prompts", { prompt: ["a", "b"] }, "prompt"],
        ["batch token lists", { prompt: [[1, 2], [3]] }, "prompt"],
        ["token ids outside the vocabulary", { prompt: [1, 99999999] }, "prompt"],
        ["negative token ids", { prompt: [-1] }, "prompt"],
        ["an empty prompt", { prompt: "" }, "prompt"],
        ["a missing prompt", {}, "prompt"],
        ["a wrong type", { prompt: "x", max_tokens: "ten" }, "max_tokens"],
        ["an out-of-range temperature", { prompt: "x", temperature: 7 }, "temperature"],
        ["too many stop strings", { prompt: "x", stop: Array.from({ length: 17 }, (_, i) => `s${i}`) }, "stop"],
        ["an invalid grammar", { prompt: "x", grammar: "root ::= (" }, "grammar"]
    ] as const) {
        it(`answers 400 naming the param for ${name}`, async () => {
            const response = await server.post("/v1/completions", body);
            assert.equal(response.status, 400);
            assert.match(response.headers.get("content-type") ?? "", /application\/json/);
            const error = (await response.json() as WireError).error;
            assert.equal(error.type, "invalid_request_error");
            assert.equal(error.param, param);
            assert.ok(error.message.length > 0);
        });
    }

    it("answers 400 for malformed JSON and for a non-object body, and ignores unknown fields", async () => {
        const malformed = await server.post("/v1/completions", "{\"prompt\": ");
        assert.equal(malformed.status, 400);
        assert.equal((await malformed.json() as WireError).error.type, "invalid_request_error");
        const array = await server.post("/v1/completions", "[1, 2]");
        assert.equal(array.status, 400);
        const unknown = await server.post("/v1/completions", { prompt: "x", max_tokens: 4, grammar: exact("fine"), some_future_field: { a: 1 } });
        assert.equal(unknown.status, 200);
    });

    it("surfaces errors as the openai SDK's typed errors", async () => {
        await assert.rejects(
            server.client.completions.create({ model: "m", prompt: "x", n: 99 }),
            (error: unknown) => error instanceof Error && (error as { status?: number }).status === 400 && (error as { param?: string }).param === "n"
        );
    });
});

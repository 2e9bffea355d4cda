import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";
import { readSse } from "../helpers/sse.js";

/**
 * `logprobs` in OpenAI's shapes on both routes, streamed too: values are log-probabilities (≤ 0),
 * alternatives come most likely first, greedy picks the most likely, and a stream reports the
 * same numbers as the non-streamed response of the same seed.
 */

interface TopWire { token: string; logprob: number; bytes: number[] }
interface ChatLogprobWire extends TopWire { top_logprobs: TopWire[] }
interface ChatCompletion {
    choices: { message: { content: string | null; reasoning_content?: string | null }; logprobs: { content: ChatLogprobWire[]; refusal: null } | null }[];
    usage: { completion_tokens: number };
}
interface ChatChunk { choices: { delta: { content?: string; reasoning_content?: string }; logprobs: { content: ChatLogprobWire[] } | null }[] }
interface CompletionLogprobsWire { tokens: string[]; token_logprobs: number[]; top_logprobs: Record<string, number>[]; text_offset: number[] }
interface Completion { choices: { text: string; logprobs: CompletionLogprobsWire | null }[]; usage: { completion_tokens: number } }

const noThinking = { chat_template_kwargs: { enable_thinking: false } };
const messages = [{ role: "user", content: "Count to three." }];

function assertBytes(entry: TopWire): void {
    assert.ok(Array.isArray(entry.bytes) && entry.bytes.every((byte) => Number.isInteger(byte) && byte >= 0 && byte < 256));
    // A token that is part of a character shows U+FFFD; any other one is its bytes as text.
    if (!entry.token.includes("\uFFFD")) assert.deepEqual(entry.bytes, [...Buffer.from(entry.token, "utf8")]);
}

function assertChatEntry(entry: ChatLogprobWire, top: number, greedy: boolean): void {
    assert.deepEqual(Object.keys(entry).sort(), ["bytes", "logprob", "token", "top_logprobs"]);
    assert.ok(entry.logprob <= 0, String(entry.logprob));
    assertBytes(entry);
    assert.ok(entry.top_logprobs.length <= top);
    for (const alternative of entry.top_logprobs) {
        assert.deepEqual(Object.keys(alternative).sort(), ["bytes", "logprob", "token"]);
        assert.ok(alternative.logprob <= 0);
        assertBytes(alternative);
    }
    const values = entry.top_logprobs.map((alternative) => alternative.logprob);
    assert.deepEqual(values, [...values].sort((a, b) => b - a), "most likely first");
    if (greedy && top >= 1) {
        assert.equal(entry.top_logprobs.length, top, "at temperature 0 the whole vocabulary is a candidate");
        assert.equal(entry.top_logprobs[0]!.token, entry.token, "greedy picks the most likely token");
        assert.equal(entry.top_logprobs[0]!.logprob, entry.logprob);
    }
}

describe("logprobs", () => {
    let server: TestServer;

    before(async () => {
        server = await startTestServer({ parallel: 1 });
    });
    after(async () => server.close());

    async function post<T>(path: string, body: Record<string, unknown>): Promise<T> {
        const response = await server.post(path, body);
        assert.equal(response.status, 200, await response.clone().text());
        return response.json() as Promise<T>;
    }

    /** Puts the slot's cache in the same state before each compared run, so both compute the same logits. */
    const reset = async (): Promise<void> => void await post("/v1/completions", { prompt: "Unrelated words first.", max_tokens: 1 });

    it("chat: one entry per generated token, in OpenAI's shape, greedy picks the top one", async () => {
        const completion = await post<ChatCompletion>("/v1/chat/completions", { messages, max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 5, ...noThinking });
        const choice = completion.choices[0]!;
        assert.equal(choice.logprobs?.refusal, null);
        const content = choice.logprobs!.content;
        assert.equal(content.length, completion.usage.completion_tokens);
        for (const entry of content) assertChatEntry(entry, 5, true);
        // Each token's bytes, put together, are the answer.
        assert.equal(Buffer.from(content.flatMap((entry) => entry.bytes)).toString("utf8"), choice.message.content);
    });

    it("chat: top_logprobs 0 gives the sampled token only; logprobs absent gives null", async () => {
        const completion = await post<ChatCompletion>("/v1/chat/completions", { messages, max_tokens: 6, temperature: 1, seed: 4, logprobs: true, ...noThinking });
        for (const entry of completion.choices[0]!.logprobs!.content) {
            assert.deepEqual(entry.top_logprobs, []);
            assert.ok(entry.logprob <= 0);
        }
        const without = await post<ChatCompletion>("/v1/chat/completions", { messages, max_tokens: 2, ...noThinking });
        assert.equal(without.choices[0]!.logprobs, null);
    });

    it("chat: reasoning tokens are reported too, unless the reasoning is not sent", async () => {
        // Thinking on: the random model stays in its think block.
        const reasoning = await post<ChatCompletion>("/v1/chat/completions", { messages, max_tokens: 5, temperature: 0, logprobs: true });
        assert.equal(reasoning.choices[0]!.logprobs!.content.length, 5);
        const hidden = await post<ChatCompletion>("/v1/chat/completions", { messages, max_tokens: 5, temperature: 0, logprobs: true, include_reasoning: false });
        assert.deepEqual(hidden.choices[0]!.logprobs!.content, []);
    });

    it("chat: a stream carries the same logprobs as the response, chunk by chunk", async () => {
        const body = { messages, max_tokens: 16, temperature: 1, seed: 11, logprobs: true, top_logprobs: 3, ...noThinking };
        await reset();
        const whole = await post<ChatCompletion>("/v1/chat/completions", body);
        await reset();
        const response = await server.post("/v1/chat/completions", { ...body, stream: true });
        const chunks = (await readSse(response)).filter((event): event is ChatChunk => event !== "[DONE]");
        const streamed = chunks.flatMap((chunk) => chunk.choices[0]?.logprobs?.content ?? []);
        assert.deepEqual(streamed, whole.choices[0]!.logprobs!.content);
        for (const entry of streamed) assertChatEntry(entry, 3, false);
        // A chunk with logprobs is a chunk with text: the logprobs travel with their tokens' text.
        for (const chunk of chunks) {
            const choice = chunk.choices[0];
            if (choice?.logprobs != null) assert.ok(choice.delta.content !== undefined || Object.keys(choice.delta).length === 0);
        }
    });

    it("completions: tokens, token_logprobs, top_logprobs and text_offset, streamed identically", async () => {
        const body = { prompt: "Once upon a time", max_tokens: 10, temperature: 0, logprobs: 3 };
        await reset();
        const whole = await post<Completion>("/v1/completions", body);
        const choice = whole.choices[0]!;
        const logprobs = choice.logprobs!;
        assert.deepEqual(Object.keys(logprobs).sort(), ["text_offset", "token_logprobs", "tokens", "top_logprobs"]);
        assert.equal(logprobs.tokens.length, whole.usage.completion_tokens);
        assert.equal(logprobs.token_logprobs.length, logprobs.tokens.length);
        assert.equal(logprobs.top_logprobs.length, logprobs.tokens.length);
        let offset = 0;
        logprobs.tokens.forEach((token, index) => {
            assert.equal(logprobs.text_offset[index], offset);
            offset += [...token].length;
            const top = Object.entries(logprobs.top_logprobs[index]!);
            assert.ok(top.length >= 1 && top.length <= 3);
            assert.ok(logprobs.token_logprobs[index]! <= 0);
            // Greedy: the sampled token is the most likely one.
            assert.equal(Math.max(...top.map(([, value]) => value)), logprobs.token_logprobs[index]);
            assert.equal(logprobs.top_logprobs[index]![token], logprobs.token_logprobs[index]);
        });
        assert.equal(logprobs.tokens.join(""), choice.text);

        await reset();
        const response = await server.post("/v1/completions", { ...body, stream: true });
        const chunks = (await readSse(response)).filter((event): event is Completion => event !== "[DONE]");
        const merged: CompletionLogprobsWire = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
        for (const chunk of chunks) {
            const part = chunk.choices[0]?.logprobs;
            if (part == null) continue;
            merged.tokens.push(...part.tokens);
            merged.token_logprobs.push(...part.token_logprobs);
            merged.top_logprobs.push(...part.top_logprobs);
            merged.text_offset.push(...part.text_offset);
        }
        assert.deepEqual(merged, logprobs);
    });

    it("a stop string cuts the logprobs with the text: a token is reported when any of its text is returned", async () => {
        // "hello" " world" " again" as three tokens (biased up, within the grammar); "o w" cuts after "hell":
        // "hello" straddles the cut and stays, " world" starts past it and goes, in every shape.
        const forced = { grammar: "root ::= \"hello world again\"", logit_bias: { 14990: 100, 1879: 100, 1549: 100 }, stop: ["o w"], temperature: 0 };
        const chat = { messages, max_tokens: 8, logprobs: true, top_logprobs: 1, ...noThinking, ...forced };
        const whole = await post<ChatCompletion>("/v1/chat/completions", chat);
        assert.equal(whole.choices[0]!.message.content, "hell");
        assert.deepEqual(whole.choices[0]!.logprobs!.content.map((entry) => entry.token), ["hello"]);
        const chunks = (await readSse(await server.post("/v1/chat/completions", { ...chat, stream: true }))).filter((event): event is ChatChunk => event !== "[DONE]");
        assert.deepEqual(chunks.flatMap((chunk) => chunk.choices[0]?.logprobs?.content ?? []).map((entry) => entry.token), ["hello"]);

        const completion = await post<Completion>("/v1/completions", { prompt: "x", max_tokens: 8, logprobs: 1, ...forced });
        assert.equal(completion.choices[0]!.text, "hell");
        assert.deepEqual(completion.choices[0]!.logprobs!.tokens, ["hello"]);
        assert.deepEqual(completion.choices[0]!.logprobs!.text_offset, [0]);
        const streamed = (await readSse(await server.post("/v1/completions", { prompt: "x", max_tokens: 8, logprobs: 1, stream: true, ...forced })))
            .filter((event): event is Completion => event !== "[DONE]").flatMap((chunk) => chunk.choices[0]?.logprobs?.tokens ?? []);
        assert.deepEqual(streamed, ["hello"]);
    });

    it("a stop string cuts the logprobs with the text, however the model split it into tokens (issue's example)", async () => {
        /** The returned text is covered by the reported tokens, and none of them starts past its end. */
        const assertLinedUp = (text: string, tokens: Buffer[], where: string): void => {
            const kept = Buffer.from(text);
            const joined = Buffer.concat(tokens);
            assert.ok(joined.subarray(0, kept.length).equals(kept), `${where}: tokens ${JSON.stringify(joined.toString())} cover ${JSON.stringify(text)}`);
            assert.ok(joined.length - (tokens.at(-1)?.length ?? 0) < kept.length, `${where}: no token starts past ${JSON.stringify(text)}`);
        };
        const cut = { grammar: "root ::= \"hello,world,again\"", stop: ["world"], temperature: 0 };
        const chat = { messages, max_tokens: 24, logprobs: true, ...noThinking, ...cut };
        await reset();
        const whole = await post<ChatCompletion>("/v1/chat/completions", chat);
        assert.equal(whole.choices[0]!.message.content, "hello,");
        const entries = whole.choices[0]!.logprobs!.content;
        assertLinedUp("hello,", entries.map((entry) => Buffer.from(entry.bytes)), "chat");
        await reset();
        const chunks = (await readSse(await server.post("/v1/chat/completions", { ...chat, stream: true }))).filter((event): event is ChatChunk => event !== "[DONE]");
        assert.deepEqual(chunks.flatMap((chunk) => chunk.choices[0]?.logprobs?.content ?? []), entries);

        const body = { prompt: "x", max_tokens: 24, logprobs: 2, ...cut };
        await reset();
        const completion = await post<Completion>("/v1/completions", body);
        const choice = completion.choices[0]!;
        assert.equal(choice.text, "hello,");
        assertLinedUp("hello,", choice.logprobs!.tokens.map((token) => Buffer.from(token)), "completions");
        assert.ok(choice.logprobs!.text_offset.every((offset) => offset < [...choice.text].length), String(choice.logprobs!.text_offset));
        await reset();
        const streamed = (await readSse(await server.post("/v1/completions", { ...body, stream: true }))).filter((event): event is Completion => event !== "[DONE]");
        assert.deepEqual(streamed.flatMap((chunk) => chunk.choices[0]?.logprobs?.text_offset ?? []), choice.logprobs!.text_offset);
        assert.deepEqual(streamed.flatMap((chunk) => chunk.choices[0]?.logprobs?.tokens ?? []), choice.logprobs!.tokens);
    });

    it("refuses out-of-range values (400)", async () => {
        const cases: [string, Record<string, unknown>, string][] = [
            ["/v1/chat/completions", { messages, logprobs: true, top_logprobs: 21 }, "top_logprobs"],
            ["/v1/chat/completions", { messages, top_logprobs: 2 }, "top_logprobs"],
            ["/v1/completions", { prompt: "x", logprobs: 6 }, "logprobs"]
        ];
        for (const [path, body, param] of cases) {
            const response = await server.post(path, body);
            assert.equal(response.status, 400, JSON.stringify(body));
            assert.equal((await response.json() as WireError).error.param, param);
        }
    });
});

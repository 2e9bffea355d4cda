import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";
import { waitFor } from "../helpers/waitFor.js";
import { startRedisServer, type RedisServer } from "./redisServer.js";

interface ResponseWire {
    id: string;
    status: string;
    output: Record<string, unknown>[];
    [key: string]: unknown;
}

const exact = (text: string): string => `root ::= ${JSON.stringify(text)}`;
const answer = "ok\n</think>\n\nStored.";

/** Reads a stream until `until` holds for the text so far, then calls `then` once; returns the whole text. */
async function readStream(response: Response, until: (text: string) => boolean, then: (text: string) => Promise<void>): Promise<string> {
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    let fired = false;
    for (;;) {
        const { value, done } = await reader.read();
        if (done) return text;
        text += decoder.decode(value, { stream: true });
        if (!fired && until(text)) {
            fired = true;
            await then(text);
        }
    }
}

const lastEvent = (text: string): Record<string, unknown> => JSON.parse(text.trim().split("\n").at(-1)!.slice("data: ".length)) as Record<string, unknown>;

/**
 * Two replicas (in one process, each its own engine) sharing a real redis-server through
 * MAPLE_RESPONSES_STORE: what one stores the other continues, reads and deletes; a cancel asked of
 * one reaches the other; with Redis down, what needs the store gets 503 store_unavailable (and
 * nothing is reported stored), the rest is served, and both reconnect by themselves.
 */
describe("the Redis response store shared by two replicas", () => {
    let redis: RedisServer;
    let one: TestServer;
    let two: TestServer;
    before(async () => {
        redis = await startRedisServer({ durable: true });
        one = await startTestServer({ responsesStore: redis.url, parallel: 2 });
        two = await startTestServer({ responsesStore: redis.url, parallel: 2 });
        for (const server of [one, two]) await waitFor(async () => ((await (await server.request("/health")).json() as Record<string, unknown>)["responses_store"] === "ready" ? true : undefined), "the store to connect");
    });
    after(async () => {
        await Promise.all([one?.close(), two?.close()]);
        await redis?.destroy();
    });

    it("continues, reads, lists and deletes on one replica what the other stored", async () => {
        const first = await (await one.post("/v1/responses", { input: "Remember 7.", grammar: exact(answer), max_output_tokens: 32 })).json() as ResponseWire;
        assert.match(first.id, /^resp_[0-9a-f]{40}$/);
        const next = await two.post("/v1/responses", { input: "What was it?", previous_response_id: first.id, grammar: exact(answer), max_output_tokens: 32 });
        assert.equal(next.status, 200, await next.clone().text());
        const second = await next.json() as ResponseWire;
        assert.equal(second.id.slice(5, 21), first.id.slice(5, 21), "a continuation keeps its conversation's tag");
        assert.ok((second["usage"] as { input_tokens: number }).input_tokens > (first["usage"] as { input_tokens: number }).input_tokens, "the stored turns were rendered");
        const read = await (await two.request(`/v1/responses/${first.id}`)).json() as ResponseWire;
        assert.deepEqual(read, first);
        const items = await (await one.request(`/v1/responses/${second.id}/input_items`)).json() as { data: Record<string, unknown>[] };
        assert.equal(items.data.length, 1);
        // An output item of a stored response, referenced from the other replica.
        const messageItem = first.output.find((item) => item["type"] === "message")!;
        const referenced = await two.post("/v1/responses", { input: [{ type: "item_reference", id: messageItem["id"] }, { role: "user", content: "Go on." }], grammar: exact(answer), max_output_tokens: 32, store: false });
        assert.equal(referenced.status, 200, await referenced.clone().text());
        assert.equal((await (await two.request(`/v1/responses/${first.id}`, { method: "DELETE" })).json() as { deleted: boolean }).deleted, true);
        assert.equal((await one.request(`/v1/responses/${first.id}`)).status, 404);
    });

    it("cancels on one replica a response the other is streaming: it ends cancelled and is stored as such", async () => {
        const response = await one.post("/v1/responses", { input: "Count", stream: true, max_output_tokens: 256, ignore_eos: true, temperature: 0 });
        assert.equal(response.status, 200);
        let id: string | undefined;
        const text = await readStream(response, (sofar) => /"id":"resp_[0-9a-f]+"/.test(sofar) && sofar.includes("response.reasoning_text.delta"), async (sofar) => {
            id = /"id":"(resp_[0-9a-f]+)"/.exec(sofar)![1]!;
            const cancel = await two.post(`/v1/responses/${id}/cancel`, {});
            assert.equal(cancel.status, 200, await cancel.clone().text());
            assert.equal((await cancel.json() as ResponseWire).status, "cancelled");
        });
        assert.ok(id !== undefined, "the stream started");
        const last = lastEvent(text);
        assert.equal(last["type"], "response.failed");
        assert.equal((last["response"] as ResponseWire).status, "cancelled");
        const stored = await (await two.request(`/v1/responses/${id}`)).json() as ResponseWire;
        assert.equal(stored.status, "cancelled");
        assert.ok(stored.output.length > 0, "the output generated before the cancel is kept");
    });

    it("while Redis is down: 503 store_unavailable with Retry-After for what needs the store, the rest served; then recovery, nothing confirmed lost", async () => {
        const kept = await (await one.post("/v1/responses", { input: "Keep me.", grammar: exact(answer), max_output_tokens: 32 })).json() as ResponseWire;
        await redis.stop();
        for (const server of [one, two]) {
            await waitFor(async () => ((await (await server.request("/health")).json() as Record<string, unknown>)["responses_store"] === "unreachable" ? true : undefined), "the store to notice");
        }
        const health = await one.request("/health");
        assert.equal(health.status, 200, "readiness stays: only store requests are refused");
        const refusals = [
            await one.post("/v1/responses", { input: "Store me.", grammar: exact(answer), max_output_tokens: 32 }),
            await two.post("/v1/responses", { input: "Go on.", previous_response_id: kept.id, store: false, grammar: exact(answer), max_output_tokens: 32 }),
            await two.request(`/v1/responses/${kept.id}`)
        ];
        for (const refusal of refusals) {
            assert.equal(refusal.status, 503, await refusal.clone().text());
            assert.equal(refusal.headers.get("retry-after"), "2");
            assert.equal((await refusal.json() as WireError).error.code, "store_unavailable");
        }
        const unstored = await two.post("/v1/responses", { input: "No store.", store: false, grammar: exact(answer), max_output_tokens: 32 });
        assert.equal(unstored.status, 200, await unstored.clone().text());
        const chat = await one.post("/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_tokens: 8 });
        assert.equal(chat.status, 200);
        await redis.start();
        for (const server of [one, two]) {
            await waitFor(async () => ((await (await server.request("/health")).json() as Record<string, unknown>)["responses_store"] === "ready" ? true : undefined), "the store to reconnect", 30_000);
        }
        assert.deepEqual(await (await two.request(`/v1/responses/${kept.id}`)).json(), kept, "an acknowledged response survived");
        const after = await two.post("/v1/responses", { input: "Go on.", previous_response_id: kept.id, grammar: exact(answer), max_output_tokens: 32 });
        assert.equal(after.status, 200, await after.clone().text());
    });

    it("a stream whose final write Redis does not confirm ends failed, not completed, and is not stored", async () => {
        const response = await one.post("/v1/responses", { input: "Count", stream: true, max_output_tokens: 200, ignore_eos: true, temperature: 0 });
        assert.equal(response.status, 200);
        let id: string | undefined;
        const text = await readStream(response, (sofar) => sofar.includes("response.reasoning_text.delta"), async (sofar) => {
            id = /"id":"(resp_[0-9a-f]+)"/.exec(sofar)![1]!;
            await redis.stop();
        });
        const last = lastEvent(text);
        assert.equal(last["type"], "response.failed", "no response.completed for a response Redis did not keep");
        assert.ok(!text.includes("response.completed"));
        assert.ok(text.includes("store_unavailable"));
        await redis.start();
        await waitFor(async () => ((await (await one.request("/health")).json() as Record<string, unknown>)["responses_store"] === "ready" ? true : undefined), "the store to reconnect", 30_000);
        assert.equal((await one.request(`/v1/responses/${id}`)).status, 404);
    });
});

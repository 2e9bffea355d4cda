import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { startHeldStream } from "../helpers/longGeneration.js";
import { Exposition } from "../helpers/prometheus.js";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";
import { waitFor } from "../helpers/waitFor.js";
import { exact } from "../helpers/grammar.js";
import { readSse, sseData } from "../helpers/sse.js";

async function scrape(server: TestServer): Promise<Exposition> {
    return new Exposition(await (await server.request("/metrics")).text());
}

describe("readiness and liveness", () => {
    it("answers /livez 200 while the model loads, while /health answers 503 loading", async () => {
        const server = await startTestServer({}, { waitReady: false });
        try {
            const [health, live] = await Promise.all([server.request("/health"), server.request("/livez")]);
            assert.equal(live.status, 200);
            assert.equal((await live.json() as { status: string }).status, "alive");
            // The model may have loaded already on a fast machine: then health is ok, never anything else.
            const status = (await health.json() as { status: string }).status;
            assert.equal(health.status, status === "ok" ? 200 : 503);
            assert.ok(status === "loading" || status === "ok", status);
            await server.ready;
            assert.equal((await server.request("/health")).status, 200);
            assert.equal((await server.request("/livez")).status, 200);
        } finally {
            await server.close();
        }
    });

    it("keeps /livez and /health open under MAPLE_API_KEY, and marks responses with MAPLE_REPLICA_ID", async () => {
        const server = await startTestServer({ apiKey: "sk-fleet-1", replicaId: "replica-b" });
        try {
            assert.equal((await server.request("/livez")).status, 200);
            assert.equal((await server.request("/health")).status, 200);
            const answer = await server.post("/v1/completions", { prompt: "Hi", max_tokens: 4, grammar: exact("ok") }, { authorization: "Bearer sk-fleet-1" });
            assert.equal(answer.status, 200);
            assert.equal(answer.headers.get("x-maple-replica"), "replica-b");
            const streamed = await server.post("/v1/completions", { prompt: "Hi", max_tokens: 4, stream: true, grammar: exact("ok") },
                { authorization: "Bearer sk-fleet-1" });
            assert.equal(streamed.headers.get("x-maple-replica"), "replica-b");
            assert.equal((await readSse(streamed)).at(-1), "[DONE]");
            assert.equal((await server.request("/v1/models")).headers.get("x-maple-replica"), "replica-b", "errors carry it too");
        } finally {
            await server.close();
        }
    });

    it("drains: /health 503 at once while requests are still served; then refuses; in-flight streams finish", async () => {
        const server = await startTestServer({ parallel: 2 });
        const held = await startHeldStream(server);
        // A drain far longer than the test: the second close() below ends it.
        const closed = server.close({ drainMs: 600_000, graceMs: 60_000 });
        try {
            const health = await server.request("/health");
            assert.equal(health.status, 503);
            const body = await health.json() as { status: string; active: number };
            assert.equal(body.status, "draining");
            assert.equal(body.active, 1);
            assert.equal((await server.request("/livez")).status, 200, "a draining replica is alive");
            const during = await server.post("/v1/completions", { prompt: "Still here?", max_tokens: 8, grammar: exact("yes") });
            assert.equal(during.status, 200, "requests that still arrive while draining are served");
            assert.equal((await during.json() as { choices: { text: string }[] }).choices[0]!.text, "yes");
            const metrics = await scrape(server);
            assert.equal(metrics.value("maple:num_requests_running"), 1);
        } finally {
            void server.close();
        }
        // Past the drain the server stops accepting: a new request is refused (503 or connection refused).
        const refused = await waitFor(async () => {
            try {
                const answer = await server.post("/v1/completions", { prompt: "Late", max_tokens: 2 });
                if (answer.status === 200) return undefined;
                return `${answer.status} ${(await answer.json() as WireError).error.code}`;
            } catch {
                return "connection refused";
            }
        }, "the server to stop accepting");
        assert.ok(refused === "503 server_shutting_down" || refused === "connection refused", refused);
        const probe = await server.request("/health").then((answer) => answer.status, () => "connection refused");
        assert.ok(probe === 503 || probe === "connection refused", String(probe));
        held.abort();
        await closed;
        assert.ok(held.received().includes("data: "));
    });
});

describe("maple:kv_cache_usage_perc", () => {
    it("is the running requests' cells over all cells: 0 when idle, exact token counts in between", async () => {
        const contextSize = 512;
        const server = await startTestServer({ parallel: 2, contextSize });
        try {
            const total = 2 * contextSize;
            const idle = await scrape(server);
            assert.equal(idle.types.get("maple:kv_cache_usage_perc"), "gauge");
            assert.equal(idle.value("maple:kv_cache_usage_perc"), 0);

            const maxTokens = 40;
            const response = await server.post("/v1/completions", {
                prompt: "Fill the cache a little:", max_tokens: maxTokens, stream: true, stream_options: { include_usage: true },
                grammar: "root ::= \"a\"{100}"
            });
            assert.equal(response.status, 200);
            const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
            const readings: number[] = [];
            let text = "";
            for (;;) {
                const chunk = await reader.read();
                if (chunk.done) break;
                text += chunk.value;
                readings.push((await scrape(server)).value("maple:kv_cache_usage_perc") * total);
            }
            const usage = (readSseText(text).find((event) => event.usage !== undefined && event.usage !== null)!).usage!;
            const evaluated = usage.prompt_tokens + usage.completion_tokens;
            for (const cells of readings) {
                // Every reading is a whole number of cells within what the request can hold.
                assert.ok(Math.abs(cells - Math.round(cells)) < 1e-6, `${cells} is not a whole number of cells`);
                assert.ok(Math.round(cells) <= evaluated, `${cells} cells, more than the request's ${evaluated} tokens`);
            }
            const during = readings.filter((cells) => Math.round(cells) > 0);
            assert.ok(during.length > 0, "some scrape saw the running request");
            assert.ok(during.every((cells) => Math.round(cells) >= usage.prompt_tokens), "a running request holds at least its prompt");
            assert.deepEqual(during, [...during].sort((a, b) => a - b), "a running request's cells only grow");
            await waitFor(async () => ((await scrape(server)).value("maple:num_requests_running") === 0 ? true : undefined), "the slot's release");
            assert.equal((await scrape(server)).value("maple:kv_cache_usage_perc"), 0, "a finished request's cached cells are free");
        } finally {
            await server.close();
        }
    });
});

interface StreamEvent {
    usage?: { prompt_tokens: number; completion_tokens: number } | null;
}

function readSseText(text: string): StreamEvent[] {
    return sseData(text).filter((event) => event !== "[DONE]") as StreamEvent[];
}

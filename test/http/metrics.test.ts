import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startHeldStream } from "../helpers/longGeneration.js";
import { Exposition } from "../helpers/prometheus.js";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";
import { waitForHealth } from "../helpers/waitFor.js";
import { exact } from "../helpers/grammar.js";
import { readSse } from "../helpers/sse.js";

interface Usage {
    prompt_tokens: number;
    completion_tokens: number;
    prompt_tokens_details: { cached_tokens: number };
}

const counters = ["maple:prompt_tokens_total", "maple:generation_tokens_total", "maple:prefix_cache_hits_total"] as const;
const histograms = ["maple:time_to_first_token_seconds", "maple:inter_token_latency_seconds",
    "maple:e2e_request_latency_seconds", "maple:request_queue_time_seconds"] as const;
const rejectionReasons = ["queue_full", "queue_timeout", "model_loading"] as const;

async function scrape(server: TestServer, headers: Record<string, string> = {}): Promise<Exposition> {
    const response = await server.request("/metrics", { headers });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
    return new Exposition(await response.text());
}

async function usageOf(response: Response): Promise<Usage> {
    assert.equal(response.status, 200);
    return (await response.json() as { usage: Usage }).usage;
}

/** Histogram buckets are cumulative and end at +Inf with the count. */
function assertWellFormed(name: string, histogram: ReturnType<Exposition["histogram"]>): void {
    assert.equal(histogram.buckets.at(-1)?.[0], "+Inf", name);
    assert.equal(histogram.buckets.at(-1)?.[1], histogram.count, name);
    histogram.buckets.forEach(([, value], index) => {
        if (index > 0) assert.ok(value >= histogram.buckets[index - 1]![1], `${name} buckets are cumulative`);
    });
}

describe("GET /metrics", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ parallel: 1, maxQueueDepth: 1 });
    });
    after(async () => server.close());

    it("starts at zero, in Prometheus' text format, with the process metrics", async () => {
        const metrics = await scrape(server);
        for (const name of counters) {
            assert.equal(metrics.types.get(name), "counter", name);
            assert.equal(metrics.value(name), 0, name);
        }
        for (const reason of rejectionReasons) assert.equal(metrics.value("maple:request_rejections_total", { reason }), 0, reason);
        for (const name of ["maple:num_requests_running", "maple:num_requests_waiting"]) {
            assert.equal(metrics.types.get(name), "gauge", name);
            assert.equal(metrics.value(name), 0, name);
        }
        for (const name of histograms) assert.equal(metrics.histogram(name).count, 0, name);
        assert.ok(metrics.value("maple_process_cpu_user_seconds_total") > 0);
        assert.ok(metrics.value("maple_nodejs_heap_size_total_bytes") > 0);
        assert.ok(metrics.value("maple_process_start_time_seconds") > 0);
    });

    it("counts exactly the tokens the responses reported, and times every generation", async () => {
        const usages: Usage[] = [];
        const completion = { prompt: "Metrics, please: say hello.", max_tokens: 16, grammar: exact("hello world") };
        usages.push(await usageOf(await server.post("/v1/completions", completion)));
        // The same prompt again on the one slot: its prompt comes from the prefix cache.
        usages.push(await usageOf(await server.post("/v1/completions", completion)));
        usages.push(await usageOf(await server.post("/v1/chat/completions", {
            messages: [{ role: "user", content: "Hi there" }], max_tokens: 16, grammar: exact("hi yourself")
        })));
        // Cut by a stop string, and cut by max_tokens: the tokens generated still count.
        usages.push(await usageOf(await server.post("/v1/completions", {
            prompt: "Count:", max_tokens: 32, stop: ["a be"], grammar: exact("alpha beta gamma delta")
        })));
        usages.push(await usageOf(await server.post("/v1/completions", { prompt: "Many:", max_tokens: 3, grammar: "root ::= \"ab\"{40}" })));
        const events = await readSse(await server.post("/v1/chat/completions", {
            messages: [{ role: "user", content: "Stream it" }], max_tokens: 16, stream: true, stream_options: { include_usage: true },
            grammar: exact("streamed words")
        }));
        const streamedUsage = events.find((event): event is { usage: Usage } => typeof event === "object" && event !== null && "usage" in event && event.usage != null);
        assert.ok(streamedUsage !== undefined);
        usages.push(streamedUsage.usage);
        // A refused request generates nothing and is no rejection (not a 503).
        assert.equal((await server.post("/v1/completions", { prompt: "x", max_tokens: 0 })).status, 400);

        const sum = (pick: (usage: Usage) => number): number => usages.reduce((total, usage) => total + pick(usage), 0);
        assert.ok(sum((usage) => usage.prompt_tokens_details.cached_tokens) > 0, "the repeated prompt was served from the cache");
        assert.ok(usages.every((usage) => usage.completion_tokens >= 1));

        const metrics = await scrape(server);
        assert.equal(metrics.value("maple:prompt_tokens_total"), sum((usage) => usage.prompt_tokens));
        assert.equal(metrics.value("maple:generation_tokens_total"), sum((usage) => usage.completion_tokens));
        assert.equal(metrics.value("maple:prefix_cache_hits_total"), sum((usage) => usage.prompt_tokens_details.cached_tokens));
        for (const reason of rejectionReasons) assert.equal(metrics.value("maple:request_rejections_total", { reason }), 0, reason);

        const ttft = metrics.histogram("maple:time_to_first_token_seconds");
        const interToken = metrics.histogram("maple:inter_token_latency_seconds");
        const e2e = metrics.histogram("maple:e2e_request_latency_seconds");
        const queue = metrics.histogram("maple:request_queue_time_seconds");
        assert.equal(ttft.count, usages.length, "one first token per request");
        assert.equal(interToken.count, sum((usage) => usage.completion_tokens - 1), "one gap per later token");
        assert.equal(e2e.count, usages.length);
        assert.equal(queue.count, usages.length);
        assert.ok(ttft.sum > 0 && interToken.sum > 0);
        assert.ok(e2e.sum >= ttft.sum, "a request ends after its first token");
        for (const [name, histogram] of [["ttft", ttft], ["itl", interToken], ["e2e", e2e], ["queue", queue]] as const) {
            assertWellFormed(name, histogram);
        }
        assert.equal(metrics.value("maple:num_requests_running"), 0);
        assert.equal(metrics.value("maple:num_requests_waiting"), 0);
    });

    it("reads running and waiting requests at scrape time, and counts a full queue's 503 as queue_full", async () => {
        const before = await scrape(server);
        const held = await startHeldStream(server);
        try {
            const waiting = server.post("/v1/completions", { prompt: "Queued:", max_tokens: 8, grammar: exact("queued ok") });
            await waitForHealth(server, (health) => health.queue_depth === 1, "the second request to queue");
            const busy = await scrape(server);
            assert.equal(busy.value("maple:num_requests_running"), 1);
            assert.equal(busy.value("maple:num_requests_waiting"), 1);

            const refused = await server.post("/v1/completions", { prompt: "x", max_tokens: 4 });
            assert.equal(refused.status, 503);
            assert.equal((await refused.json() as WireError).error.code, "engine_overloaded");
            const afterRefusal = await scrape(server);
            assert.equal(afterRefusal.value("maple:request_rejections_total", { reason: "queue_full" }), 1);
            assert.equal(afterRefusal.value("maple:request_rejections_total", { reason: "queue_timeout" }), 0);
            assert.equal(afterRefusal.value("maple:request_rejections_total", { reason: "model_loading" }), 0);

            held.abort();
            const queued = await usageOf(await waiting);
            await waitForHealth(server, (health) => health.active === 0, "the slot to be free");
            const idle = await scrape(server);
            assert.equal(idle.value("maple:num_requests_running"), 0);
            assert.equal(idle.value("maple:num_requests_waiting"), 0);
            assert.equal(idle.value("maple:request_rejections_total", { reason: "queue_full" }), 1);
            // The cancelled stream's tokens may be counted too (work done), never fewer than the queued request's.
            assert.ok(idle.value("maple:prompt_tokens_total") >= before.value("maple:prompt_tokens_total") + queued.prompt_tokens);
            assert.ok(idle.value("maple:generation_tokens_total") >= before.value("maple:generation_tokens_total") + queued.completion_tokens);
            assert.ok(idle.histogram("maple:request_queue_time_seconds").count > before.histogram("maple:request_queue_time_seconds").count);
            assert.equal(idle.histogram("maple:e2e_request_latency_seconds").count,
                before.histogram("maple:e2e_request_latency_seconds").count + 1, "only completed requests have an end-to-end latency");
        } finally {
            held.abort();
        }
    });
});

describe("GET /metrics with MAPLE_API_KEY", () => {
    const apiKey = "sk-maple-metrics-51d0";
    let keyed: TestServer;
    let publicMetrics: TestServer;
    before(async () => {
        // Neither needs the model: /metrics answers while it loads.
        keyed = await startTestServer({ apiKey }, { waitReady: false });
        publicMetrics = await startTestServer({ apiKey, metricsPublic: true }, { waitReady: false });
    });
    after(async () => {
        // Closed once loaded: a server closed in the middle of llama.cpp's load can leave the process running.
        for (const server of [keyed, publicMetrics]) {
            await server.ready.catch(() => undefined);
            await server.close();
        }
    });

    // First, while the model is most likely still loading.
    it("counts a 503 model_loading as a rejection", async () => {
        const answer = await keyed.request("/v1/models", { headers: { authorization: `Bearer ${apiKey}` } });
        // The model may have finished loading already; the counter must match what was answered either way.
        const loading = answer.status === 503 && (await answer.json() as WireError).error.code === "model_loading";
        const metrics = await scrape(keyed, { authorization: `Bearer ${apiKey}` });
        assert.equal(metrics.value("maple:request_rejections_total", { reason: "model_loading" }), loading ? 1 : 0);
        assert.equal(metrics.value("maple:request_rejections_total", { reason: "queue_full" }), 0);
    });

    it("answers 401 without the key, and serves with it", async () => {
        const refused = await keyed.request("/metrics");
        assert.equal(refused.status, 401);
        assert.equal((await refused.json() as WireError).error.type, "authentication_error");
        assert.equal((await keyed.request("/metrics", { headers: { authorization: "Bearer wrong" } })).status, 401);
        const metrics = await scrape(keyed, { authorization: `Bearer ${apiKey}` });
        assert.equal(metrics.value("maple:num_requests_running"), 0);
    });

    it("serves /metrics without the key under MAPLE_METRICS_PUBLIC=true, and only /metrics", async () => {
        const metrics = await scrape(publicMetrics);
        assert.equal(metrics.value("maple:generation_tokens_total"), 0);
        assert.equal((await publicMetrics.request("/v1/models")).status, 401);
        assert.equal((await publicMetrics.post("/tokenize", { content: "hi" })).status, 401);
    });
});

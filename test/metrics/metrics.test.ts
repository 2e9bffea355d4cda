import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EngineOverloadedError, InvalidRequestError, ModelLoadingError, ServerError } from "../../src/errors.js";
import { MapleMetrics, rejectionReason, type SchedulerLoad } from "../../src/metrics/metrics.js";
import { Exposition } from "../helpers/prometheus.js";

const idle = (): MapleMetrics => new MapleMetrics({ readLoad: () => undefined });
const expose = async (metrics: MapleMetrics): Promise<Exposition> => new Exposition(await metrics.expose());

describe("MapleMetrics", () => {
    it("names each 503 by its reason and ignores every other error", async () => {
        const metrics = idle();
        metrics.countRejection(new ModelLoadingError());
        metrics.countRejection(new EngineOverloadedError("The server is busy: 3 requests are already waiting (MAPLE_MAX_QUEUE_DEPTH). Retry later.", "queue_full"));
        metrics.countRejection(new EngineOverloadedError("Timed out after 300 s waiting for a free slot (MAPLE_QUEUE_TIMEOUT). Retry later.", "queue_timeout"));
        metrics.countRejection(new EngineOverloadedError("Timed out after 300 s waiting for a free slot (MAPLE_QUEUE_TIMEOUT). Retry later.", "queue_timeout"));
        for (const other of [new InvalidRequestError("bad", "prompt"), new ServerError(), new Error("boom"), "not an error", undefined]) {
            metrics.countRejection(other);
        }
        const exposition = await expose(metrics);
        assert.equal(exposition.value("maple:request_rejections_total", { reason: "model_loading" }), 1);
        assert.equal(exposition.value("maple:request_rejections_total", { reason: "queue_full" }), 1);
        assert.equal(exposition.value("maple:request_rejections_total", { reason: "queue_timeout" }), 2);
        assert.equal([...exposition.samples.keys()].filter((series) => series.startsWith("maple:request_rejections_total")).length, 3);
        assert.equal(rejectionReason(new ModelLoadingError()), "model_loading");
    });

    it("records a generation's tokens and timings through its observer", async () => {
        const metrics = idle();
        const completed = metrics.observeGeneration();
        completed.onFirstToken();
        for (let token = 2; token <= 5; token++) completed.onToken();
        completed.onEnd({ promptTokens: 12, completionTokens: 5, cachedTokens: 7, queuedMs: 250 }, true);
        // Cancelled after two tokens: its work counts, but it has no end-to-end latency.
        const cancelled = metrics.observeGeneration();
        cancelled.onFirstToken();
        cancelled.onToken();
        cancelled.onEnd({ promptTokens: 3, completionTokens: 2, cachedTokens: 0, queuedMs: 0 }, false);

        const exposition = await expose(metrics);
        assert.equal(exposition.value("maple:prompt_tokens_total"), 15);
        assert.equal(exposition.value("maple:generation_tokens_total"), 7);
        assert.equal(exposition.value("maple:prefix_cache_hits_total"), 7);
        assert.equal(exposition.histogram("maple:time_to_first_token_seconds").count, 2);
        assert.equal(exposition.histogram("maple:inter_token_latency_seconds").count, 5);
        assert.equal(exposition.histogram("maple:e2e_request_latency_seconds").count, 1);
        const queue = exposition.histogram("maple:request_queue_time_seconds");
        assert.equal(queue.count, 2);
        assert.equal(queue.sum, 0.25);
        assert.deepEqual(queue.buckets.find(([bound]) => bound === "0.3"), ["0.3", 2]);
    });

    it("reads the scheduler's load at every scrape", async () => {
        const scheduler: { load?: SchedulerLoad } = {};
        const metrics = new MapleMetrics({ readLoad: () => scheduler.load });
        let exposition = await expose(metrics);
        assert.equal(exposition.value("maple:num_requests_running"), 0);
        assert.equal(exposition.value("maple:kv_cache_usage_perc"), 0);
        scheduler.load = { running: 2, waiting: 5, kvCellsInUse: 300, kvCellsTotal: 4096 };
        exposition = await expose(metrics);
        assert.equal(exposition.value("maple:num_requests_running"), 2);
        assert.equal(exposition.value("maple:num_requests_waiting"), 5);
        assert.equal(exposition.types.get("maple:kv_cache_usage_perc"), "gauge");
        assert.equal(exposition.value("maple:kv_cache_usage_perc"), 300 / 4096);
    });

    it("keeps each server's series apart in one process", async () => {
        const first = idle();
        const second = idle();
        first.observeGeneration().onEnd({ promptTokens: 4, completionTokens: 1, cachedTokens: 0, queuedMs: 0 }, true);
        assert.equal((await expose(first)).value("maple:prompt_tokens_total"), 4);
        assert.equal((await expose(second)).value("maple:prompt_tokens_total"), 0);
        assert.match(first.contentType, /^text\/plain; version=0\.0\.4/);
        first.clear();
        assert.equal((await first.expose()).trim(), "");
    });
});

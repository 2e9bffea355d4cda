import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EngineOverloadedError, InvalidRequestError, ModelLoadingError, ServerError } from "../../src/errors.js";
import { MapleMetrics, rejectionReason, type ModelLoad } from "../../src/metrics/metrics.js";
import { Exposition } from "../helpers/prometheus.js";

const unloaded = (model: string): ModelLoad => ({
    model, loaded: false, memoryBytes: 0, inFlight: 0, running: 0, waiting: 0, kvCellsInUse: 0, kvCellsTotal: 0, promptCache: undefined
});
const idle = (): MapleMetrics => new MapleMetrics({ readModels: () => [unloaded("chat")] });
const expose = async (metrics: MapleMetrics): Promise<Exposition> => new Exposition(await metrics.expose());

describe("MapleMetrics", () => {
    it("names each 503 by its reason and ignores every other error", async () => {
        const metrics = new MapleMetrics({ readModels: () => [unloaded("chat"), unloaded("embed")] });
        metrics.countRejection(new ModelLoadingError(), "embed");
        metrics.countRejection(new EngineOverloadedError("The server is busy: 3 requests are already waiting (MAPLE_MAX_QUEUE_DEPTH). Retry later.", "queue_full"), "chat");
        metrics.countRejection(new EngineOverloadedError("Timed out after 300 s waiting for a free slot (MAPLE_QUEUE_TIMEOUT). Retry later.", "queue_timeout"), "chat");
        metrics.countRejection(new EngineOverloadedError("Timed out after 300 s waiting for a free slot (MAPLE_QUEUE_TIMEOUT). Retry later.", "queue_timeout"), "chat");
        for (const other of [new InvalidRequestError("bad", "prompt"), new ServerError(), new Error("boom"), "not an error", undefined]) {
            metrics.countRejection(other, "chat");
        }
        const exposition = await expose(metrics);
        assert.equal(exposition.value("maple:request_rejections_total", { reason: "model_loading", model: "embed" }), 1);
        assert.equal(exposition.value("maple:request_rejections_total", { reason: "model_loading", model: "chat" }), 0);
        assert.equal(exposition.value("maple:request_rejections_total", { reason: "queue_full", model: "chat" }), 1);
        assert.equal(exposition.value("maple:request_rejections_total", { reason: "queue_timeout", model: "chat" }), 2);
        assert.equal(exposition.value("maple:request_rejections_total", { reason: "queue_timeout" }), 2);
        assert.equal([...exposition.samples.keys()].filter((series) => series.startsWith("maple:request_rejections_total")).length, 6,
            "every known reason of every model, from the start");
        assert.equal(rejectionReason(new ModelLoadingError()), "model_loading");
    });

    it("records a generation's tokens and timings through its observer", async () => {
        const metrics = new MapleMetrics({ readModels: () => [unloaded("chat"), unloaded("other")] });
        const completed = metrics.observeGeneration("chat");
        completed.onFirstToken();
        for (let token = 2; token <= 5; token++) completed.onToken();
        completed.onEnd({ promptTokens: 12, completionTokens: 5, cachedTokens: 7, queuedMs: 250 }, true);
        // Cancelled after two tokens: its work counts, but it has no end-to-end latency.
        const cancelled = metrics.observeGeneration("chat");
        cancelled.onFirstToken();
        cancelled.onToken();
        cancelled.onEnd({ promptTokens: 3, completionTokens: 2, cachedTokens: 0, queuedMs: 0 }, false);

        const exposition = await expose(metrics);
        const chat = { model: "chat" };
        assert.equal(exposition.value("maple:prompt_tokens_total", chat), 15);
        assert.equal(exposition.value("maple:generation_tokens_total", chat), 7);
        assert.equal(exposition.value("maple:prefix_cache_hits_total", chat), 7);
        assert.equal(exposition.histogram("maple:time_to_first_token_seconds", chat).count, 2);
        assert.equal(exposition.histogram("maple:inter_token_latency_seconds", chat).count, 5);
        assert.equal(exposition.histogram("maple:e2e_request_latency_seconds", chat).count, 1);
        for (const family of ["maple:prompt_tokens_total", "maple:generation_tokens_total", "maple:prefix_cache_hits_total"]) {
            assert.equal(exposition.value(family, { model: "other" }), 0, `${family} of a model that served nothing reads 0`);
        }
        assert.equal(exposition.histogram("maple:time_to_first_token_seconds", { model: "other" }).count, 0, "each model's histograms exist from the start");
        assert.equal(exposition.histogram("maple:time_to_first_token_seconds").count, 2, "and keep the observations once scraped");
        const queue = exposition.histogram("maple:request_queue_time_seconds", chat);
        assert.equal(queue.count, 2);
        assert.equal(queue.sum, 0.25);
        assert.deepEqual(queue.buckets.find(([bound]) => bound === "0.3"), ["0.3", 2]);
    });

    it("reads each model's scheduler load at every scrape", async () => {
        const models = [unloaded("chat"), unloaded("small")];
        const metrics = new MapleMetrics({ readModels: () => models });
        let exposition = await expose(metrics);
        assert.equal(exposition.value("maple:num_requests_running", { model: "chat" }), 0);
        assert.equal(exposition.value("maple:kv_cache_usage_perc", { model: "chat" }), 0);
        models[0] = { ...unloaded("chat"), loaded: true, running: 2, waiting: 5, kvCellsInUse: 300, kvCellsTotal: 4096 };
        models[1] = { ...unloaded("small"), loaded: true, running: 1, waiting: 0, kvCellsInUse: 10, kvCellsTotal: 1024 };
        exposition = await expose(metrics);
        assert.equal(exposition.value("maple:num_requests_running", { model: "chat" }), 2);
        assert.equal(exposition.value("maple:num_requests_running"), 3, "the server's total");
        assert.equal(exposition.value("maple:num_requests_waiting", { model: "chat" }), 5);
        assert.equal(exposition.types.get("maple:kv_cache_usage_perc"), "gauge");
        assert.equal(exposition.value("maple:kv_cache_usage_perc", { model: "chat" }), 300 / 4096);
        assert.equal(exposition.value("maple:kv_cache_usage_perc", { model: "small" }), 10 / 1024);
    });

    it("keeps each server's series apart in one process", async () => {
        const first = idle();
        const second = idle();
        first.observeGeneration("chat").onEnd({ promptTokens: 4, completionTokens: 1, cachedTokens: 0, queuedMs: 0 }, true);
        assert.equal((await expose(first)).value("maple:prompt_tokens_total"), 4);
        assert.equal((await expose(second)).value("maple:prompt_tokens_total"), 0);
        assert.match(first.contentType, /^text\/plain; version=0\.0\.4/);
        first.clear();
        assert.equal((await first.expose()).trim(), "");
    });
});

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { GenerationRequest } from "../../src/engine/types.js";
import { longGeneration, longPlainGeneration, startHeldStream } from "../helpers/longGeneration.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { readHealth, waitForHealth } from "../helpers/waitFor.js";

/** The spec: a client that disconnects cancels its generation; the slot frees within a token or so. */
const freeDeadlineMs = 5_000;

describe("cancellation when the client goes away", () => {
    let server: TestServer;
    /** Every generation the engine was asked to start, in order. */
    const started: GenerationRequest[] = [];

    before(async () => {
        server = await startTestServer({ parallel: 1 });
        const state = server.host.state;
        assert.equal(state.status, "ready");
        if (state.status !== "ready") return;
        const engine = state.engine;
        const generateOnSlot = engine.generateOnSlot.bind(engine);
        engine.generateOnSlot = (slot, request) => {
            started.push(request);
            return generateOnSlot(slot, request);
        };
    });
    after(async () => server.close());

    /** The next request is served in full once the slot is free. */
    async function assertServedNext(): Promise<void> {
        const response = await server.post("/v1/completions", { prompt: "Next:", max_tokens: 16, grammar: "root ::= \"served next\"" });
        assert.equal(response.status, 200);
        assert.equal((await response.json() as { choices: { text: string }[] }).choices[0]!.text, "served next");
    }

    for (const [path, generation] of [["grammar-constrained", longGeneration], ["plain-sampling (native decode run)", longPlainGeneration]] as const) {
        it(`frees the slot when a streaming client disconnects mid-stream on the ${path} path, and serves the next request`, async () => {
            const held = await startHeldStream(server, generation);
            const request = started.at(-1)!;
            assert.equal((await readHealth(server)).active, 1);
            held.abort();
            const idle = await waitForHealth(server, (health) => health.active === 0, "the slot to free after the disconnect", freeDeadlineMs);
            assert.equal(idle.queue_depth, 0);
            assert.ok(request.signal.aborted, "the engine's generation was cancelled, not left to finish");
            assert.ok(!held.received().includes("[DONE]"));
            await assertServedNext();
        });
    }

    it("frees the slot when a non-streaming request is aborted while generating", async () => {
        const controller = new AbortController();
        const generationsBefore = started.length;
        const pending = server.request("/v1/completions", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(longGeneration),
            signal: controller.signal
        });
        const rejected = assert.rejects(pending, (error: unknown) => error instanceof Error && error.name === "AbortError");
        await waitForHealth(server, (health) => health.active === 1, "the generation to start");
        assert.equal(started.length, generationsBefore + 1);
        controller.abort();
        await rejected;
        await waitForHealth(server, (health) => health.active === 0, "the slot to free after the abort", freeDeadlineMs);
        assert.ok(started.at(-1)!.signal.aborted, "the engine's generation was cancelled");
        await assertServedNext();
    });

    it("drops a request aborted while it waits in the queue: it leaves the queue and never runs", async () => {
        const held = await startHeldStream(server);
        const generationsBefore = started.length;
        try {
            const controller = new AbortController();
            const pending = server.request("/v1/completions", {
                method: "POST",
                headers: { "content-type": "application/json" },
                body: JSON.stringify({ prompt: "queued then abandoned", max_tokens: 16, grammar: "root ::= \"never\"" }),
                signal: controller.signal
            });
            const rejected = assert.rejects(pending, (error: unknown) => error instanceof Error && error.name === "AbortError");
            await waitForHealth(server, (health) => health.queue_depth === 1, "the request to queue");
            controller.abort();
            await rejected;
            const afterAbort = await waitForHealth(server, (health) => health.queue_depth === 0, "the aborted request to leave the queue", freeDeadlineMs);
            assert.equal(afterAbort.active, 1, "the first generation still holds the slot");
        } finally {
            held.abort();
        }
        await waitForHealth(server, (health) => health.active === 0, "the slot to free", freeDeadlineMs);
        await assertServedNext();
        // Only the holder and the next request ever reached the engine.
        assert.equal(started.length, generationsBefore + 1);
        const state = server.host.state;
        assert.equal(state.status, "ready");
        if (state.status !== "ready") return;
        const prompts = started.map((request) => state.engine.detokenize(request.promptTokens));
        assert.ok(!prompts.some((prompt) => prompt.includes("abandoned")), `engine prompts: ${JSON.stringify(prompts)}`);
        const health = await readHealth(server);
        assert.equal(health.queue_depth, 0);
        assert.equal(health.active, 0);
    });

    it("serves more requests at once than Node's default 10 listeners on the server's shutdown signal, without a MaxListenersExceededWarning", async () => {
        const warnings: string[] = [];
        const onWarning = (warning: Error): void => void warnings.push(warning.name);
        process.on("warning", onWarning);
        try {
            // One slot: they wait in the queue together, each listening on the shutdown signal.
            const responses = await Promise.all(Array.from({ length: 12 }, async (_, index) => server.post("/v1/completions", {
                prompt: `Request ${index}:`, max_tokens: 2, ignore_eos: true, temperature: 0
            })));
            for (const response of responses) assert.equal(response.status, 200);
            // Node emits process warnings on a later turn.
            await new Promise((resolve) => setImmediate(resolve));
            assert.deepEqual(warnings.filter((name) => name === "MaxListenersExceededWarning"), []);
        } finally {
            process.off("warning", onWarning);
        }
    });
});

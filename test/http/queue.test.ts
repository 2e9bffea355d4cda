import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { InternalServerError } from "openai";
import { exact } from "../helpers/grammar.js";
import { longPlainGeneration, startHeldStream } from "../helpers/longGeneration.js";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";
import { readHealth, waitForHealth } from "../helpers/waitFor.js";

const quick = (text: string): object => ({ prompt: "Quick:", max_tokens: 16, grammar: exact(text) });

async function assertOverloaded(response: Response): Promise<WireError["error"]> {
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("retry-after"), "5");
    assert.match(response.headers.get("content-type") ?? "", /application\/json/);
    const { error } = await response.json() as WireError;
    assert.equal(error.code, "engine_overloaded");
    assert.equal(error.type, "server_error");
    assert.ok(error.message.length > 0);
    return error;
}

describe("the request queue: one slot, MAPLE_MAX_QUEUE_DEPTH=1", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ parallel: 1, maxQueueDepth: 1 });
    });
    after(async () => server.close());

    // The slot is held on the path users get (plain sampling, the native decode run); the queue's
    // timeout below holds it on the grammar-constrained one.
    it("queues a second request, refuses a third with 503 engine_overloaded and Retry-After: 5, and serves the queued one once the first is cancelled", async () => {
        const held = await startHeldStream(server, longPlainGeneration);
        try {
            const waiting = server.post("/v1/completions", quick("queued ok"));
            const queued = await waitForHealth(server, (health) => health.queue_depth === 1, "the second request to queue");
            assert.equal(queued.active, 1);

            await assertOverloaded(await server.post("/v1/completions", quick("never")));
            // A streaming request is refused before its stream starts: a plain HTTP 503, not an in-band error.
            await assertOverloaded(await server.post("/v1/completions", { ...quick("never"), stream: true }));
            await assert.rejects(server.client.completions.create({ model: "maple-preview", prompt: "x", max_tokens: 4 }),
                (error: unknown) => error instanceof InternalServerError && error.status === 503);
            const stillQueued = await readHealth(server);
            assert.equal(stillQueued.queue_depth, 1, "refused requests never join the queue");
            assert.equal(stillQueued.active, 1);

            assert.ok(!held.received().includes("[DONE]"), "the first generation still holds the slot");
            held.abort();
            const response = await waiting;
            assert.equal(response.status, 200);
            assert.equal((await response.json() as { choices: { text: string }[] }).choices[0]!.text, "queued ok");
        } finally {
            held.abort();
        }
        const idle = await waitForHealth(server, (health) => health.active === 0, "the slot to be free");
        assert.equal(idle.queue_depth, 0);
    });

    it("serves requests normally again afterwards", async () => {
        const response = await server.post("/v1/completions", quick("after"));
        assert.equal(response.status, 200);
        const health = await readHealth(server);
        assert.equal(health.queue_depth, 0);
        assert.equal(health.active, 0);
    });
});

describe("MAPLE_QUEUE_TIMEOUT", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ parallel: 1, queueTimeoutSeconds: 0.5 });
    });
    after(async () => server.close());

    it("answers a request that waited too long with 503 engine_overloaded", async () => {
        const held = await startHeldStream(server);
        try {
            const error = await assertOverloaded(await server.post("/v1/completions", quick("too late")));
            assert.match(error.message, /MAPLE_QUEUE_TIMEOUT/);
            assert.ok(!held.received().includes("[DONE]"), "the slot was held the whole time");
            const health = await readHealth(server);
            assert.equal(health.queue_depth, 0, "the timed-out request left the queue");
            assert.equal(health.active, 1);
        } finally {
            held.abort();
        }
        const idle = await waitForHealth(server, (health) => health.active === 0, "the slot to be free");
        assert.equal(idle.queue_depth, 0);
    });
});

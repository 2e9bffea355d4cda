import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { EventEmitter, getEventListeners, once } from "node:events";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { requestCancellation, type RequestCancellation } from "../../src/http/requestSignal.js";
import { waitFor } from "../helpers/waitFor.js";

describe("requestCancellation", () => {
    let app: FastifyInstance;
    let base: string;
    let shutdown = new AbortController();
    const given: RequestCancellation[] = [];
    const listeners = (): number => getEventListeners(shutdown.signal, "abort").length;

    before(async () => {
        app = Fastify({ logger: false });
        app.get("/quick", async (request, reply) => {
            const cancellation = requestCancellation(request, reply, shutdown.signal);
            given.push(cancellation);
            return { aborted: cancellation.signal.aborted };
        });
        // Answers once its signal fires: 503 for a shutdown (nobody reads a client-gone answer).
        app.get("/held", async (request, reply) => {
            const cancellation = requestCancellation(request, reply, shutdown.signal);
            given.push(cancellation);
            if (!cancellation.signal.aborted) await once(cancellation.signal, "abort");
            return reply.code(503).send({ shutdown: cancellation.shutdown.aborted });
        });
        base = await app.listen({ port: 0, host: "127.0.0.1" });
    });
    after(async () => app.close());

    it("leaves no listener on the shutdown signal once a response is complete, and aborts nothing", async () => {
        shutdown = new AbortController();
        given.length = 0;
        for (let index = 0; index < 20; index++) {
            const response = await fetch(`${base}/quick`);
            assert.deepEqual(await response.json(), { aborted: false });
        }
        // The server's `close` may follow the client's receipt of the response by a turn.
        await waitFor(() => (listeners() === 0 ? true : undefined), "every response to close");
        assert.equal(given.length, 20);
        assert.ok(given.every(({ signal, clientGone }) => !signal.aborted && !clientGone.aborted));
    });

    it("fires signal and clientGone, not shutdown, when the client leaves mid-response", async () => {
        shutdown = new AbortController();
        given.length = 0;
        const client = new AbortController();
        const pending = fetch(`${base}/held`, { signal: client.signal }).catch((error: unknown) => error);
        const cancellation = await waitFor(() => given[0], "the request to reach its handler");
        client.abort();
        await once(cancellation.signal, "abort");
        assert.ok(cancellation.clientGone.aborted);
        assert.ok(!cancellation.shutdown.aborted);
        assert.equal(listeners(), 0);
        assert.equal((await pending as Error).name, "AbortError");
    });

    it("fires signal and shutdown, not clientGone, when the server shuts down, and at once when it already has", async () => {
        shutdown = new AbortController();
        given.length = 0;
        const pending = fetch(`${base}/held`);
        const cancellation = await waitFor(() => given[0], "the request to reach its handler");
        const reason = new Error("shutting down");
        shutdown.abort(reason);
        assert.ok(cancellation.signal.aborted);
        assert.equal(cancellation.signal.reason, reason);
        assert.ok(!cancellation.clientGone.aborted);
        const response = await pending;
        assert.equal(response.status, 503);
        assert.deepEqual(await response.json(), { shutdown: true });
        assert.deepEqual(await (await fetch(`${base}/quick`)).json(), { aborted: true });
        assert.equal(listeners(), 0);
    });

    it("fires clientGone at once, and registers nothing, for a client gone before the handler ran", () => {
        shutdown = new AbortController();
        // A reply whose `close` was emitted before requestCancellation was called: it never comes again.
        const raw = Object.assign(new EventEmitter(), { writableFinished: false, closed: true });
        const request = { log: { info: () => undefined } } as unknown as FastifyRequest;
        const cancellation = requestCancellation(request, { raw } as unknown as FastifyReply, shutdown.signal);
        assert.ok(cancellation.clientGone.aborted && cancellation.signal.aborted);
        assert.equal(listeners(), 0);
    });

    it("retains nothing per request on a long-lived shutdown signal (100k requests, measured in a child)", async () => {
        // AbortSignal.any on Node 20 kept a WeakRef per combined signal on each source for the
        // source's life: ~59 bytes a request on the server's shutdown signal.
        const script = fileURLToPath(new URL("requestSignalRetention.js", import.meta.url));
        const child = spawn(process.execPath, ["--expose-gc", script, "100000"], { stdio: ["ignore", "pipe", "inherit"] });
        let output = "";
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
        const [code] = await once(child, "exit") as [number | null];
        assert.equal(code, 0, output);
        const { bytesPerRequest, shutdownListeners } = JSON.parse(output) as { bytesPerRequest: number; shutdownListeners: number };
        assert.equal(shutdownListeners, 0);
        assert.ok(bytesPerRequest < 8, `${bytesPerRequest.toFixed(1)} bytes kept per request`);
    });
});

/**
 * Run by requestSignal.test.ts in a child process with --expose-gc (`node --expose-gc
 * requestSignalRetention.js COUNT`): COUNT requests, each given a cancellation and then closed
 * complete, against one long-lived shutdown signal, as a server's life is. Prints what stays on the
 * heap per request once the garbage is collected, and the listeners left on the shutdown signal.
 */
import { EventEmitter, getEventListeners } from "node:events";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { FastifyReply, FastifyRequest } from "fastify";
import { requestCancellation } from "../../src/http/requestSignal.js";

const collect = globalThis.gc;
if (collect === undefined) throw new Error("run with --expose-gc");
const count = Number(process.argv[2] ?? "100000");
const shutdown = new AbortController();
const request = { log: { info: () => undefined } } as unknown as FastifyRequest;

/** The parts of a reply requestCancellation uses: `raw`'s close event, writableFinished and closed. */
function serveOne(): void {
    const raw = Object.assign(new EventEmitter(), { writableFinished: false, closed: false });
    requestCancellation(request, { raw } as unknown as FastifyReply, shutdown.signal);
    raw.writableFinished = true;
    raw.closed = true;
    raw.emit("close");
}

async function heapAfterCollection(): Promise<number> {
    await nextTurn();
    collect!();
    collect!();
    return process.memoryUsage().heapUsed;
}

// A first round so that compiled code and lazily made internals are not counted.
for (let index = 0; index < 1000; index++) serveOne();
const before = await heapAfterCollection();
for (let index = 0; index < count; index++) serveOne();
const after = await heapAfterCollection();
process.stdout.write(JSON.stringify({ bytesPerRequest: (after - before) / count, shutdownListeners: getEventListeners(shutdown.signal, "abort").length }));

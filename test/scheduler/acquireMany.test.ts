import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RequestAbortedError } from "../../src/errors.js";
import { Scheduler } from "../../src/scheduler/scheduler.js";

const never = new AbortController().signal;

/** n > 1 takes its slots at once: no request holds part of what it needs while waiting for the rest. */
describe("Scheduler.acquireMany", () => {
    it("takes the slot the policy chooses for the prompt first, then the others", async () => {
        const scheduler = new Scheduler({
            slots: 3, maxQueueDepth: 4, queueTimeoutMs: 1000,
            chooseSlot: (free, prompt) => (prompt.length > 0 && free.includes(2) ? 2 : free[0]!)
        });
        const leases = await scheduler.acquireMany(3, [1, 2, 3, 4, 5, 6], never);
        assert.equal(leases[0]!.slot, 2);
        assert.deepEqual(leases.map((lease) => lease.slot).sort(), [0, 1, 2]);
        assert.equal(scheduler.active, 3);
        for (const lease of leases) lease.release();
        assert.equal(scheduler.active, 0);
    });

    it("waits until all its slots are free, and later requests wait behind it (first in, first out)", async () => {
        const scheduler = new Scheduler({ slots: 2, maxQueueDepth: 4, queueTimeoutMs: 5000 });
        const holder = await scheduler.acquire([], never);
        const order: string[] = [];
        const pair = scheduler.acquireMany(2, [], never).then((leases) => {
            order.push("pair");
            return leases;
        });
        const single = scheduler.acquire([], never).then((lease) => {
            order.push("single");
            return lease;
        });
        await Promise.resolve();
        assert.deepEqual(order, [], "one free slot is not enough for the pair, and the single waits behind it");
        assert.equal(scheduler.queueDepth, 2);
        holder.release();
        const leases = await pair;
        assert.deepEqual(order, ["pair"]);
        for (const lease of leases) lease.release();
        (await single).release();
        assert.deepEqual(order, ["pair", "single"]);
        assert.equal(scheduler.active, 0);
    });

    it("lets the requests behind a waiter that gave up go on", async () => {
        const scheduler = new Scheduler({ slots: 2, maxQueueDepth: 4, queueTimeoutMs: 5000 });
        const holder = await scheduler.acquire([], never);
        const controller = new AbortController();
        const pair = scheduler.acquireMany(2, [], controller.signal);
        const single = scheduler.acquire([], never);
        controller.abort();
        await assert.rejects(pair, RequestAbortedError);
        const lease = await single;
        assert.equal(scheduler.active, 2);
        lease.release();
        holder.release();
    });

    it("refuses more slots than there are", async () => {
        const scheduler = new Scheduler({ slots: 2, maxQueueDepth: 4, queueTimeoutMs: 1000 });
        await assert.rejects(scheduler.acquireMany(3, [], never), RangeError);
    });
});

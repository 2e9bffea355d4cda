import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EngineOverloadedError, RequestAbortedError } from "../../src/errors.js";
import { Scheduler } from "../../src/scheduler/scheduler.js";

const never = new AbortController().signal;

describe("Scheduler", () => {
    it("hands out free slots at once and counts them active", async () => {
        const scheduler = new Scheduler({ slots: 2, maxQueueDepth: 4, queueTimeoutMs: 1000 });
        const first = await scheduler.acquire([1], never);
        const second = await scheduler.acquire([2], never);
        assert.deepEqual([first.slot, second.slot].sort(), [0, 1]);
        assert.equal(scheduler.active, 2);
        first.release();
        first.release();
        assert.equal(scheduler.active, 1, "a second release does not free the slot twice");
        second.release();
        assert.equal(scheduler.active, 0);
    });

    it("serves waiters first in, first out as slots free up", async () => {
        const scheduler = new Scheduler({ slots: 1, maxQueueDepth: 4, queueTimeoutMs: 5000 });
        const holder = await scheduler.acquire([], never);
        const order: string[] = [];
        const waiters = ["a", "b", "c"].map((name) => scheduler.acquire([], never).then((lease) => {
            order.push(name);
            return lease;
        }));
        assert.equal(scheduler.queueDepth, 3);
        holder.release();
        for (const waiter of waiters) (await waiter).release();
        assert.deepEqual(order, ["a", "b", "c"]);
        assert.equal(scheduler.queueDepth, 0);
        assert.equal(scheduler.active, 0);
    });

    it("refuses beyond the queue depth, and times out a wait, with engine_overloaded", async () => {
        const scheduler = new Scheduler({ slots: 1, maxQueueDepth: 1, queueTimeoutMs: 50 });
        const holder = await scheduler.acquire([], never);
        const waiting = scheduler.acquire([], never);
        await assert.rejects(scheduler.acquire([], never), (error: unknown) => error instanceof EngineOverloadedError && error.code === "engine_overloaded" && error.retryAfterSeconds === 5);
        await assert.rejects(waiting, (error: unknown) => error instanceof EngineOverloadedError && /Timed out/.test(error.message));
        assert.equal(scheduler.queueDepth, 0);
        holder.release();
        assert.equal(scheduler.active, 0);
    });

    it("drops a waiter whose request is cancelled while queued; it never gets a slot", async () => {
        const scheduler = new Scheduler({ slots: 1, maxQueueDepth: 4, queueTimeoutMs: 5000 });
        const holder = await scheduler.acquire([], never);
        const controller = new AbortController();
        const cancelled = scheduler.acquire([], controller.signal);
        const next = scheduler.acquire([], never);
        controller.abort();
        await assert.rejects(cancelled, RequestAbortedError);
        assert.equal(scheduler.queueDepth, 1);
        holder.release();
        const lease = await next;
        assert.equal(lease.slot, 0);
        lease.release();
        await assert.rejects(scheduler.acquire([], AbortSignal.abort()), RequestAbortedError);
    });

    it("routes a prompt to the free slot holding its longest prefix, else the least recently used", async () => {
        const cached: number[][] = [[1, 2, 3, 4], [9, 9], []];
        const scheduler = new Scheduler({
            slots: 3, maxQueueDepth: 0, queueTimeoutMs: 1000,
            cachedPrefixLength: (slot, prompt) => {
                let length = 0;
                while (length < prompt.length && cached[slot]![length] === prompt[length]) length++;
                return length;
            }
        });
        const toSlot0 = await scheduler.acquire([1, 2, 3, 7], never);
        assert.equal(toSlot0.slot, 0);
        const toSlot1 = await scheduler.acquire([9, 9, 9], never);
        assert.equal(toSlot1.slot, 1);
        toSlot0.release();
        toSlot1.release();
        // No slot shares a prefix: the never-used slot 2 is taken, not slot 0's cache.
        const unrelated = await scheduler.acquire([5], never);
        assert.equal(unrelated.slot, 2);
        unrelated.release();
        // Slot 0 was released before slot 1 and slot 2, so it is the least recently used.
        const again = await scheduler.acquire([6], never);
        assert.equal(again.slot, 0);
        again.release();
    });
});

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

    it("offers the free slots least recently released first, and takes the one chosen", async () => {
        const offered: number[][] = [];
        const scheduler = new Scheduler({
            slots: 3, maxQueueDepth: 0, queueTimeoutMs: 1000,
            chooseSlot: (free, prompt) => {
                offered.push([...free]);
                return prompt[0] === 9 ? free[free.length - 1]! : free[0]!;
            }
        });
        const first = await scheduler.acquire([1], never);
        assert.equal(first.slot, 0);
        const last = await scheduler.acquire([9], never);
        assert.equal(last.slot, 2);
        last.release();
        first.release();
        // Slot 1 was never used, then slot 2 and slot 0 were released in that order.
        const again = await scheduler.acquire([1], never);
        assert.deepEqual(offered, [[0, 1, 2], [1, 2], [1, 2, 0]]);
        assert.equal(again.slot, 1);
    });

    it("without a policy, takes the least recently used free slot", async () => {
        const scheduler = new Scheduler({ slots: 2, maxQueueDepth: 0, queueTimeoutMs: 1000 });
        const a = await scheduler.acquire([1], never);
        const b = await scheduler.acquire([1], never);
        b.release();
        a.release();
        assert.equal((await scheduler.acquire([1], never)).slot, 1);
    });

    it("refuses a choice that is not a free slot", async () => {
        const scheduler = new Scheduler({ slots: 2, maxQueueDepth: 0, queueTimeoutMs: 1000, chooseSlot: () => 5 });
        await assert.rejects(scheduler.acquire([1], never), RangeError);
    });
});

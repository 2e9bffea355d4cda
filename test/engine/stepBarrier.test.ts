import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { StepBarrier } from "../../src/engine/stepBarrier.js";

/** Each member arrives in the given order and records, once released, that it resumed. */
async function resumeOrder(barrier: StepBarrier, arrivalOrder: number[]): Promise<number[]> {
    const resumed: number[] = [];
    await Promise.all(arrivalOrder.map(async (slot) => {
        await barrier.arrive(slot);
        resumed.push(slot);
    }));
    return resumed;
}

describe("StepBarrier", () => {
    it("lets a lone generation step without waiting", () => {
        const barrier = new StepBarrier();
        barrier.join();
        assert.equal(barrier.arrive(0), undefined);
    });

    it("releases generations in slot order, whatever order they arrived in", async () => {
        // llama.cpp decodes only consecutive sequence ids as one ubatch: the batch must be queued 0, 1, 2, 3.
        for (const arrivalOrder of [[1, 2, 3, 0], [3, 2, 1, 0], [2, 0, 3, 1]]) {
            const barrier = new StepBarrier();
            for (let i = 0; i < arrivalOrder.length; i++) barrier.join();
            assert.deepEqual(await resumeOrder(barrier, arrivalOrder), [0, 1, 2, 3], `arrived ${arrivalOrder.join(", ")}`);
        }
    });

    it("waits for every member before releasing any", async () => {
        const barrier = new StepBarrier();
        barrier.join();
        barrier.join();
        let released = false;
        const first = barrier.arrive(1)!.then(() => (released = true));
        await new Promise((resolve) => setImmediate(resolve));
        assert.equal(released, false, "released with one of two members still out");
        await barrier.arrive(0);
        await first;
        assert.equal(released, true);
    });

    it("does not wait for a member that is prefilling", async () => {
        const barrier = new StepBarrier();
        barrier.join();
        barrier.join();
        let finishPrefill!: () => void;
        const prefill = barrier.prefill(() => new Promise<void>((resolve) => (finishPrefill = resolve)));
        await barrier.arrive(0);
        finishPrefill();
        await prefill;
    });

    it("keeps waiters until exclusive work is done, then releases them", async () => {
        const barrier = new StepBarrier();
        barrier.join();
        barrier.join();
        const order: string[] = [];
        let finishWork!: () => void;
        const exclusive = barrier.exclusive(async () => {
            order.push("work started");
            await new Promise<void>((resolve) => (finishWork = resolve));
            order.push("work done");
        });
        const arrivals = Promise.all([barrier.arrive(1), barrier.arrive(0)]).then(() => order.push("released"));
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepEqual(order, ["work started"]);
        finishWork();
        await exclusive;
        await arrivals;
        assert.deepEqual(order, ["work started", "work done", "released"]);
    });

    it("holds prompt chunks while exclusive work waits, and lets them go when it is done", async () => {
        const barrier = new StepBarrier();
        assert.equal(barrier.prefillGate(), undefined);
        let finishWork!: () => void;
        const exclusive = barrier.exclusive(() => new Promise<void>((resolve) => (finishWork = resolve)));
        const order: string[] = [];
        const chunk = barrier.prefillGate()!.then(() => order.push("chunk"));
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepEqual(order, []);
        finishWork();
        await exclusive;
        await chunk;
        assert.deepEqual(order, ["chunk"]);
        assert.equal(barrier.prefillGate(), undefined);
    });

    it("starts exclusive work only once its listener says no step is in flight", async () => {
        const barrier = new StepBarrier();
        let settle!: () => void;
        let settled = false;
        barrier.onExclusive(() => new Promise<void>((resolve) => {
            settle = () => {
                settled = true;
                resolve();
            };
        }));
        let ranWhileSettled: boolean | undefined;
        const exclusive = barrier.exclusive(async () => { ranWhileSettled = settled; });
        await new Promise((resolve) => setImmediate(resolve));
        assert.equal(ranWhileSettled, undefined, "exclusive work ran with a step in flight");
        settle();
        await exclusive;
        assert.equal(ranWhileSettled, true);
    });
});

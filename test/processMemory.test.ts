import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cgroupInactiveFileBytes, memoryFrom, processMemory } from "../src/processMemory.js";

const gib = 2 ** 30;

describe("the memory a process may count on", () => {
    it("is a container's limit when one is set below the machine's memory, and what is available within it", () => {
        const memory = memoryFrom({ machineBytes: 24 * gib, constrainedBytes: 10 * gib, availableBytes: 9.5 * gib });
        assert.deepEqual(memory, { totalBytes: 10 * gib, availableBytes: 9.5 * gib, limitBytes: 10 * gib, machineBytes: 24 * gib });
    });

    it("is the machine's when the cgroup has no limit (cgroup v1 reads 2^63 rounded to a page; Node may say 0 or nothing)", () => {
        for (const constrainedBytes of [9223372036854771712, 2 ** 64, 0, undefined]) {
            const memory = memoryFrom({ machineBytes: 24 * gib, constrainedBytes, availableBytes: 20 * gib });
            assert.equal(memory.totalBytes, 24 * gib);
            assert.equal(memory.limitBytes, undefined);
            assert.equal(memory.availableBytes, 20 * gib);
        }
    });

    it("counts a cgroup's inactive file cache as available within its limit, as the kubelet's working set does", () => {
        // A 5.1 GiB model file just read inside a 10 GiB pod: its cache is in the cgroup's usage.
        const memory = memoryFrom({ machineBytes: 24 * gib, constrainedBytes: 10 * gib, availableBytes: 4.6 * gib, reclaimableBytes: 5.1 * gib });
        assert.ok(Math.abs(memory.availableBytes - 9.7 * gib) < 1);
        // Outside a limit, MemAvailable already counts the reclaimable cache.
        assert.equal(memoryFrom({ machineBytes: 24 * gib, constrainedBytes: undefined, availableBytes: 20 * gib, reclaimableBytes: 3 * gib }).availableBytes, 20 * gib);
    });

    it("never says more is available than the limit", () => {
        assert.equal(memoryFrom({ machineBytes: 24 * gib, constrainedBytes: 4 * gib, availableBytes: 20 * gib }).availableBytes, 4 * gib);
        assert.equal(memoryFrom({ machineBytes: 24 * gib, constrainedBytes: 4 * gib, availableBytes: 3 * gib, reclaimableBytes: 2 * gib }).availableBytes, 4 * gib);
    });

    it("reads this process's figures from Node", () => {
        const memory = processMemory();
        assert.ok(memory.totalBytes > 0 && memory.totalBytes <= memory.machineBytes);
        assert.ok(memory.availableBytes > 0 && memory.availableBytes <= memory.totalBytes);
        assert.ok(cgroupInactiveFileBytes() >= 0);
    });
});

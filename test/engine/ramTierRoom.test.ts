import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { PromptCache } from "../../src/engine/promptCache/promptCache.js";
import { ramTierRoom } from "../../src/engine/promptCache/ramTierRoom.js";

const mib = 2 ** 20;

describe("the prompt cache's room on its tmpfs", () => {
    it("keeps the requested bound when the tmpfs has room for it", () => {
        assert.deepEqual(ramTierRoom(512 * mib, "/dev/shm", 12_000 * mib), { boundBytes: 512 * mib, shortfall: undefined });
    });

    it("is cut to 90% of a container's default 64 MiB /dev/shm, and says how to give it room", () => {
        const room = ramTierRoom(4096 * mib, "/dev/shm", 64 * mib);
        assert.equal(room.boundBytes, Math.floor(64 * mib * 0.9));
        assert.match(room.shortfall ?? "", /asks for 4096 MiB but \/dev\/shm has 64 MiB free: it keeps 58 MiB/);
        assert.match(room.shortfall ?? "", /--shm-size/);
        assert.match(room.shortfall ?? "", /medium: Memory/);
        assert.match(room.shortfall ?? "", /--cache-ram/);
    });

    it("is told by PromptCache.open when the directory's filesystem cannot hold the bound", async () => {
        const root = await mkdtemp(join(tmpdir(), "maple-ram-room-"));
        const told: string[] = [];
        try {
            // More than any filesystem here has free.
            const cache = await PromptCache.open({
                ramBytes: 2 ** 53, diskBytes: 0, identity: "test", maxTokens: 4096, slidingWindow: 0, ramRoot: root, onShortfall: (message) => told.push(message)
            });
            assert.equal(told.length, 1);
            assert.ok(cache?.ram !== undefined && cache.ram.limitBytes < 2 ** 53, "the tier's bound is what the filesystem has room for");
            await cache.dispose();
            const roomy = await PromptCache.open({
                ramBytes: mib, diskBytes: 0, identity: "test", maxTokens: 4096, slidingWindow: 0, ramRoot: root, onShortfall: (message) => told.push(message)
            });
            assert.equal(told.length, 1, "no word when there is room");
            assert.equal(roomy?.ram?.limitBytes, mib);
            await roomy?.dispose();
        } finally {
            await rm(root, { recursive: true, force: true });
        }
    });
});

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { PromptCache } from "../../src/engine/promptCache/promptCache.js";

const root = await mkdtemp(join(tmpdir(), "maple-prompt-cache-test-"));
after(() => rm(root, { recursive: true, force: true }));

async function openCache(slidingWindow = 0): Promise<PromptCache> {
    const cache = await PromptCache.open({ ramBytes: 1 << 20, diskBytes: 0, identity: "test", maxTokens: 4096, slidingWindow, ramRoot: root });
    assert.ok(cache !== undefined);
    return cache;
}

/** A write as llama.cpp's would be: `bytes` bytes into the file it is given. */
const writeBytes = (bytes: number) => async (file: string): Promise<number> => {
    await writeFile(file, Buffer.alloc(bytes));
    return bytes;
};

const turn = (length: number): number[] => Array.from({ length }, (_, index) => index);

describe("the prompt cache's saves", () => {
    it("deletes the entries a save supersedes before it writes, and the new entry inherits their proof", async () => {
        const cache = await openCache();
        const first = await cache.save(turn(100), undefined, writeBytes(1000));
        assert.ok(first !== undefined);
        assert.ok(await cache.restore(first, async () => turn(100)));
        let supersededFileAtWrite: boolean | undefined;
        const second = await cache.save(turn(140), undefined, async (file) => {
            // The write reuses the memory the superseded state held: its file is gone already.
            supersededFileAtWrite = existsSync(first.file);
            return writeBytes(1200)(file);
        });
        assert.equal(supersededFileAtWrite, false);
        assert.ok(second !== undefined && cache.holds(second) && !cache.holds(first));
        assert.equal(second.proven, true);
        assert.equal(cache.stats().bytes.ram, 1200);
        await cache.dispose();
    });

    it("keeps entries a save does not supersede: another conversation's, one being restored, and any on a sliding-window model", async () => {
        const cache = await openCache();
        const other = await cache.save([7, 7, 7], undefined, writeBytes(100));
        const restoring = await cache.save(turn(50), undefined, writeBytes(500));
        assert.ok(other !== undefined && restoring !== undefined);
        let release!: () => void;
        const loading = cache.restore(restoring, () => new Promise((resolve) => (release = () => resolve(turn(50)))));
        await cache.save(turn(80), undefined, writeBytes(800));
        assert.ok(existsSync(other.file) && cache.holds(other));
        assert.ok(existsSync(restoring.file) && cache.holds(restoring));
        release();
        assert.ok(await loading);
        await cache.dispose();

        const windowed = await openCache(128);
        const short = await windowed.save(turn(200), undefined, writeBytes(200));
        assert.ok(short !== undefined);
        await windowed.save(turn(300), undefined, writeBytes(300));
        assert.ok(existsSync(short.file) && windowed.holds(short));
        await windowed.dispose();
    });
});

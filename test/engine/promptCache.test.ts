import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { PromptCache, type PromptCacheEvent } from "../../src/engine/promptCache/promptCache.js";

const root = await mkdtemp(join(tmpdir(), "maple-prompt-cache-test-"));
after(() => rm(root, { recursive: true, force: true }));

async function openCache(slidingWindow = 0, onEvent?: (event: PromptCacheEvent) => void): Promise<PromptCache> {
    const cache = await PromptCache.open({ ramBytes: 1 << 20, diskBytes: 0, identity: "test", maxTokens: 4096, slidingWindow, ramRoot: root, onEvent });
    assert.ok(cache !== undefined);
    return cache;
}

/** A write as llama.cpp's would be: `bytes` bytes into the file it is given. */
const writeBytes = (bytes: number) => async (file: string): Promise<number> => {
    await writeFile(file, Buffer.alloc(bytes));
    return bytes;
};

const turn = (length: number): number[] => Array.from({ length }, (_, index) => index);

describe("the prompt cache's restores", () => {
    it("reports a restore's own time apart from its wait for the context", async () => {
        const events: PromptCacheEvent[] = [];
        const cache = await openCache(0, (event) => events.push(event));
        const entry = await cache.save(turn(100), undefined, writeBytes(1000));
        assert.ok(entry !== undefined);
        // As the slot store's load: 60 ms waiting for the context, then a load that took 5.
        assert.ok(await cache.restore(entry, async () => {
            await new Promise((resolve) => setTimeout(resolve, 60));
            return { tokens: turn(100), milliseconds: 5 };
        }));
        const restore = events.find((event) => event.kind === "restore");
        assert.ok(restore?.kind === "restore");
        assert.ok(restore.seconds >= 0.005 && restore.seconds < 0.03, `own ${restore.seconds} s`);
        assert.ok(restore.waitSeconds >= 0.03, `wait ${restore.waitSeconds} s`);
        await cache.dispose();
    });

    it("times a load it is not told the time of whole", async () => {
        const events: PromptCacheEvent[] = [];
        const cache = await openCache(0, (event) => events.push(event));
        const entry = await cache.save(turn(10), undefined, writeBytes(100));
        assert.ok(entry !== undefined);
        assert.ok(await cache.restore(entry, async () => {
            await new Promise((resolve) => setTimeout(resolve, 40));
            return { tokens: turn(10) };
        }));
        const restore = events.find((event) => event.kind === "restore");
        assert.ok(restore?.kind === "restore" && restore.seconds >= 0.03 && restore.waitSeconds < 0.01);
        await cache.dispose();
    });
});

describe("the prompt cache's saves", () => {
    it("deletes the entries a save supersedes before it writes, and the new entry inherits their proof", async () => {
        const cache = await openCache();
        const first = await cache.save(turn(100), undefined, writeBytes(1000));
        assert.ok(first !== undefined);
        assert.ok(await cache.restore(first, async () => ({ tokens: turn(100) })));
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

    it("keeps entries a save does not supersede: another conversation's, and one being restored", async () => {
        const cache = await openCache();
        const other = await cache.save([7, 7, 7], undefined, writeBytes(100));
        const restoring = await cache.save(turn(50), undefined, writeBytes(500));
        assert.ok(other !== undefined && restoring !== undefined);
        let release!: () => void;
        const loading = cache.restore(restoring, () => new Promise((resolve) => (release = () => resolve({ tokens: turn(50) }))));
        await cache.save(turn(80), undefined, writeBytes(800));
        assert.ok(existsSync(other.file) && cache.holds(other));
        assert.ok(existsSync(restoring.file) && cache.holds(restoring));
        release();
        assert.ok(await loading);
        await cache.dispose();
    });

    it("on a sliding-window model, supersedes only the same conversation's turn states: preambles and other conversations' stay", async () => {
        const cache = await openCache(128);
        const preamble = await cache.save(turn(150), undefined, writeBytes(150), { preamble: true });
        // Another conversation's state that the new one extends (a fork under another key) stays too.
        const otherConversation = await cache.save(turn(200), "a", writeBytes(200));
        const ownTurn = await cache.save(turn(220), "b", writeBytes(220));
        assert.ok(preamble !== undefined && otherConversation !== undefined && ownTurn !== undefined);
        let ownTurnFileAtWrite: boolean | undefined;
        const next = await cache.save(turn(300), "b", async (file) => {
            ownTurnFileAtWrite = existsSync(ownTurn.file);
            return writeBytes(300)(file);
        });
        assert.equal(ownTurnFileAtWrite, false);
        assert.ok(next !== undefined && cache.holds(next) && !cache.holds(ownTurn));
        assert.ok(existsSync(preamble.file) && cache.holds(preamble));
        assert.ok(existsSync(otherConversation.file) && cache.holds(otherConversation));
        // Cut back inside the old turns, the new entry does not serve a prompt exactly: the preamble's entry does.
        assert.equal(cache.longestMatch([...turn(180), 9999], 181, "b")?.entry, preamble);
        await cache.dispose();
    });
});

import assert from "node:assert/strict";
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { MapleConfig } from "../../src/config/settings.js";
import { Exposition } from "../helpers/prometheus.js";
import {
    cached, complete, conversation, referencePrompt, restoredLength, returningConversation, tokensOf, turnLength, type CompletionWire
} from "../helpers/returningConversation.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { waitFor } from "../helpers/waitFor.js";

const metrics = async (server: TestServer): Promise<Exposition> => new Exposition(await (await server.request("/metrics")).text());

const cacheServer = (model: string, overrides: Partial<MapleConfig> = {}): Promise<TestServer> =>
    startTestServer({ model: `synthetic:${model}`, parallel: 1, cacheRamMiB: 64, ...overrides });

for (const model of ["maple-tiny", "qwen3-tiny"]) {
    describe(`prompt cache on ${model}`, () => {
        it("a restored state gives, greedy and token by token, what the slot gives when it was never evicted", async () => {
            // C's state holds its answer too; C's next prompt shares only C's prompt: on qwen3-tiny
            // the saved state is cut back to it, on maple-tiny the one saved before the prompt's end is restored.
            const c = conversation(20, turnLength);
            const cNext = [...c, ...conversation(22, 10)];
            // The same slot layout, without a cache, and A and C never leave their slot.
            const uncached = await cacheServer(model, { cacheRamMiB: 0 });
            let reference: CompletionWire;
            let cReference: CompletionWire;
            try {
                reference = await returningConversation(uncached, model, 10, false);
                assert.equal(cached(reference), restoredLength(model), "the slot kept A's prompt");
                await complete(uncached, referencePrompt(c, model), { max_tokens: 1 });
                cReference = await complete(uncached, cNext);
                assert.equal(cached(cReference), restoredLength(model), "the slot kept C's prompt");
            } finally {
                await uncached.close();
            }
            const server = await cacheServer(model);
            try {
                const second = await returningConversation(server, model, 10, true);
                assert.equal(cached(second), restoredLength(model), "A's state was restored");
                assert.deepEqual(tokensOf(second), tokensOf(reference));
                const exposition = await metrics(server);
                assert.equal(exposition.value("maple:prompt_cache_restores_total", { tier: "ram" }), 1);
                assert.equal(exposition.value("maple:prompt_cache_saves_total", { tier: "ram" }), 2);
                await complete(server, c);
                await complete(server, conversation(21, turnLength), { max_tokens: 1 });
                const cut = await complete(server, cNext);
                assert.equal(cached(cut), restoredLength(model));
                assert.deepEqual(tokensOf(cut), tokensOf(cReference));
            } finally {
                await server.close();
            }
        });
    });
}

describe("prompt cache for a chat on maple-tiny (sliding window)", () => {
    let server: TestServer;
    before(async () => {
        server = await cacheServer("maple-tiny");
    });
    after(async () => server.close());

    const system = (topic: string) => ({ role: "system", content: `You answer questions about ${topic}. ${"Keep every answer short and plain. ".repeat(30)}` });
    const chat = async (messages: unknown[]): Promise<{ usage: CompletionWire["usage"] }> => {
        const response = await server.post("/v1/chat/completions", { messages, max_tokens: 1, temperature: 0 });
        assert.equal(response.status, 200, await response.clone().text());
        return response.json() as Promise<{ usage: CompletionWire["usage"] }>;
    };
    const tokenize = async (messages: unknown[]): Promise<number[]> =>
        ((await (await server.post("/tokenize", { messages, add_generation_prompt: true })).json()) as { tokens: number[] }).tokens;

    it("restores a returning conversation up to where its next prompt leaves the last one (before the pre-filled <think>)", async () => {
        // A question long enough (16 tokens or more past the system prompt, whose own state is saved
        // as the shared preamble) that the conversation's state is worth saving too.
        const first = [system("rivers"), { role: "user", content: "How long is the Nile? Give its length in kilometres and in miles, and name the countries it flows through." }];
        await chat(first);
        // Another conversation takes the only slot: the first one's state is saved.
        await chat([system("mountains"), { role: "user", content: "How high is Everest?" }]);
        const second = [...first, { role: "assistant", content: "About 6,650 km." }, { role: "user", content: "And the Amazon?" }];
        const [before, after] = [await tokenize(first), await tokenize(second)];
        const shared = before.findIndex((token, index) => token !== after[index]);
        assert.ok(shared > 128 && shared >= before.length - 3, `the next prompt shares ${shared} of ${before.length} tokens`);
        // All of what it shares: the template says where the next turn leaves it (four tokens before the end was the fixed guess).
        assert.equal(cached(await chat(second)), shared);
    });
});

describe("prompt cache bounds, keys, concurrency and metrics", () => {
    let server: TestServer;
    before(async () => {
        // 2 MiB hold three 300-token qwen3-tiny states (≈2 KB per token).
        server = await cacheServer("qwen3-tiny", { cacheRamMiB: 2, parallel: 2 });
    });
    after(async () => server.close());

    it("keeps the host-memory tier within its bound, evicting the least recently used", async () => {
        const limit = (await metrics(server)).value("maple:prompt_cache_limit_bytes", { tier: "ram" });
        assert.equal(limit, 2 << 20);
        for (let seed = 100; seed < 110; seed += 1) {
            await complete(server, conversation(seed, turnLength), { max_tokens: 1 });
            const exposition = await metrics(server);
            assert.ok(exposition.value("maple:prompt_cache_bytes", { tier: "ram" }) <= limit);
        }
        const exposition = await metrics(server);
        assert.ok(exposition.value("maple:prompt_cache_evictions_total", { tier: "ram" }) > 0);
        assert.ok(exposition.value("maple:prompt_cache_bytes", { tier: "ram" }) > 0);
        // The most recent conversations come back from the cache; the oldest was evicted.
        assert.equal(cached(await complete(server, [...conversation(107, turnLength), 5000], { max_tokens: 1 })), turnLength);
        assert.equal(cached(await complete(server, [...conversation(100, turnLength), 5000], { max_tokens: 1 })), 0);
        // Both conversations came back after their slots were reused (100's even though its entry was evicted);
        // at most one other (101) is as old as the 8 departures after which one counts as gone: (2 + 1) / (2 + 1 + 2) at least.
        const rule = await metrics(server);
        assert.ok(rule.value("maple:prompt_cache_return_share", {}) >= 0.6, "the return share counts the conversations that came back");
        // Measured, not the fallback of a tenth until a save and a batch were timed.
        const ratio = rule.value("maple:prompt_cache_save_to_prefill_ratio", {});
        assert.ok(ratio > 0 && ratio !== 0.1, `save-to-prefill ratio ${ratio}`);
    });

    it("serves concurrent requests of one conversation from the same saved state, with the same answer", async () => {
        const a = conversation(200, turnLength);
        await complete(server, a, { max_tokens: 1 });
        // Two other conversations take both slots: A is only in the cache now.
        await Promise.all([complete(server, conversation(201, turnLength), { max_tokens: 1 }), complete(server, conversation(202, turnLength), { max_tokens: 1 })]);
        const next = [...a, ...conversation(203, 30)];
        const [one, two] = await Promise.all([complete(server, next), complete(server, next)]);
        assert.deepEqual(tokensOf(one), tokensOf(two));
        assert.ok(cached(one) >= turnLength && cached(two) >= turnLength, `cached ${cached(one)} and ${cached(two)}`);
    });

    it("takes the conversation key from prompt_cache_key, user or X-Session-Id, on both generating routes", async () => {
        const keyed = conversation(300, turnLength);
        await complete(server, keyed, { max_tokens: 1, prompt_cache_key: "conversation-300" });
        await complete(server, conversation(301, turnLength), { max_tokens: 1, user: "someone" });
        await complete(server, conversation(302, turnLength), { max_tokens: 1 });
        const next = await complete(server, [...keyed, ...conversation(303, 10)], { max_tokens: 1, prompt_cache_key: "conversation-300" });
        assert.equal(cached(next), turnLength);
        const chat = await server.post("/v1/chat/completions", { messages: [{ role: "user", content: "Hi" }], max_tokens: 1 }, { "x-session-id": "tab-1" });
        assert.equal(chat.status, 200);
    });

    it("counts every restored token in cached_tokens and in the metrics", async () => {
        const before = await metrics(server);
        const a = conversation(400, turnLength);
        const b = conversation(401, turnLength);
        const c = conversation(402, turnLength);
        const responses: CompletionWire[] = [];
        for (const prompt of [a, b, c, [...a, 7000], [...b, 7000], [...c, 7000]]) responses.push(await complete(server, prompt, { max_tokens: 1 }));
        const after = await metrics(server);
        const delta = (name: string, labels: Record<string, string> = {}): number => after.value(name, labels) - before.value(name, labels);
        const cachedSum = responses.reduce((sum, response) => sum + cached(response), 0);
        assert.equal(delta("maple:prefix_cache_hits_total"), cachedSum);
        // Two slots, three conversations: at least one of the returning ones came from the cache.
        const restores = delta("maple:prompt_cache_restores_total", { tier: "ram" });
        assert.ok(restores >= 1);
        assert.ok(responses.slice(3).every((response) => cached(response) === turnLength), JSON.stringify(responses.map(cached)));
        const observed = (name: string): number => after.histogram(name).count - before.histogram(name).count;
        assert.equal(observed("maple:prompt_cache_restore_seconds"), restores);
        assert.equal(observed("maple:prompt_cache_restore_wait_seconds"), restores);
    });

    it("a request cancelled while its state is restored leaves the slot usable and the state restorable", async () => {
        const a = conversation(500, turnLength);
        await complete(server, a, { max_tokens: 1 });
        await Promise.all([complete(server, conversation(501, turnLength), { max_tokens: 1 }), complete(server, conversation(502, turnLength), { max_tokens: 1 })]);
        // Streaming answers once a slot is held; the restore runs as the first token is asked for.
        const cancelled = new AbortController();
        const response = await server.request("/v1/completions", {
            method: "POST", headers: { "content-type": "application/json" }, signal: cancelled.signal,
            body: JSON.stringify({ prompt: [...a, 7001], max_tokens: 12, temperature: 0, ignore_eos: true, stream: true })
        });
        assert.equal(response.status, 200);
        cancelled.abort();
        await waitFor(async () => ((await metrics(server)).value("maple:num_requests_running") === 0 ? true : undefined), "the cancelled request to end", 60_000);
        const again = await complete(server, [...a, 7001]);
        assert.equal(cached(again), turnLength);
        assert.equal(tokensOf(again).length, 12);
    });
});

describe("prompt cache on disk", () => {
    let dir: string;
    before(async () => {
        dir = await mkdtemp(join(tmpdir(), "maple-disk-cache-"));
    });
    after(async () => rm(dir, { recursive: true, force: true }));

    const diskServer = (model = "maple-tiny"): Promise<TestServer> => cacheServer(model, { cacheRamMiB: 0, cacheDir: dir, cacheDiskMiB: 64 });
    const a = conversation(600, turnLength);

    /** Serves A, then B in A's slot, so A is saved; returns once A's disk entry is complete. */
    async function saveA(server: TestServer): Promise<CompletionWire> {
        const first = await complete(server, a, { max_tokens: 1 });
        await complete(server, conversation(601, turnLength), { max_tokens: 1 });
        await waitFor(async () => ((await metrics(server)).value("maple:prompt_cache_saves_total", { tier: "disk" }) >= 1 ? true : undefined),
            "A's disk entry", 60_000);
        return first;
    }

    const entryDirs = async (): Promise<string[]> => (await readdir(dir)).map((name) => join(dir, name));
    const stateFiles = async (entryDir: string): Promise<string[]> => (await readdir(entryDir)).filter((name) => name.endsWith(".state")).map((name) => join(entryDir, name));

    it("restores a conversation saved before a restart", async () => {
        const first = await diskServer();
        const reference = await saveA(first).finally(() => first.close());
        const second = await diskServer();
        try {
            const again = await complete(second, [...a, 7002]);
            assert.equal(cached(again), restoredLength("maple-tiny"), "restored from disk");
            assert.equal(tokensOf(reference).length, 1);
            assert.equal((await metrics(second)).value("maple:prompt_cache_restores_total", { tier: "disk" }), 1);
        } finally {
            await second.close();
        }
    });

    it("ignores a corrupted entry: never loaded, the conversation is evaluated again", async () => {
        const [entryDir] = await entryDirs();
        for (const file of await stateFiles(entryDir!)) {
            const bytes = await readFile(file);
            bytes.fill(0x5a, bytes.length >> 1, (bytes.length >> 1) + 4096);
            await writeFile(file, bytes);
        }
        const server = await diskServer();
        try {
            const again = await complete(server, [...a, 7002]);
            assert.equal(cached(again), 0);
            const exposition = await metrics(server);
            assert.equal(exposition.value("maple:prompt_cache_restores_total", { tier: "disk" }), 0);
            assert.ok(exposition.value("maple:prompt_cache_ignored_entries_total", { tier: "disk" }) >= 1);
        } finally {
            await server.close();
        }
    });

    it("never loads another model's entry, even one moved into this model's directory", async () => {
        await rm(dir, { recursive: true, force: true });
        const other = await diskServer("qwen3-tiny");
        await saveA(other).finally(() => other.close());
        const [qwenDir] = await entryDirs();
        const maple = await diskServer("maple-tiny");
        try {
            const mapleDir = (await entryDirs()).find((entry) => entry !== qwenDir)!;
            assert.ok(mapleDir !== undefined, "each model has a directory of its own");
            await maple.close();
            // The same tokens were saved by qwen3-tiny: copied beside maple-tiny's entries.
            await cp(qwenDir!, mapleDir, { recursive: true });
        } catch (error) {
            await maple.close();
            throw error;
        }
        const server = await diskServer("maple-tiny");
        try {
            const again = await complete(server, [...a, 7002]);
            assert.equal(cached(again), 0);
            const exposition = await metrics(server);
            assert.ok(exposition.value("maple:prompt_cache_ignored_entries_total", { tier: "disk" }) >= 1);
            assert.equal(exposition.value("maple:prompt_cache_restores_total", { tier: "disk" }), 0);
        } finally {
            await server.close();
        }
    });
});

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import pino from "pino";
import { createClient } from "redis";
import { StoreUnavailableError } from "../../src/errors.js";
import { RedisResponseStore } from "../../src/responses/redisResponseStore.js";
import type { ResponseStoreLimits, StoredResponse } from "../../src/responses/responseStore.js";
import { startRedisServer, type RedisServer } from "../fleet/redisServer.js";
import { waitFor } from "../helpers/waitFor.js";
import { responseStoreContract, stored } from "./responseStoreContract.js";

describe("RedisResponseStore, on a real redis-server", () => {
    let redis: RedisServer;
    const stores: RedisResponseStore[] = [];
    const open = async (limits: ResponseStoreLimits, prefix = `test:${randomBytes(4).toString("hex")}:`): Promise<RedisResponseStore> => {
        const store = new RedisResponseStore({ url: redis.url, limits, logger: pino({ level: "silent" }), prefix, timeoutMs: 1000 });
        stores.push(store);
        await waitFor(() => (store.state === "ready" ? true : undefined), "the store to connect");
        return store;
    };
    before(async () => {
        redis = await startRedisServer({ durable: true });
    });
    after(async () => {
        await Promise.all(stores.map((store) => store.close()));
        await redis?.destroy();
    });

    responseStoreContract((limits) => open(limits));

    it("is shared: what one replica stores, another reads, and each key expires with the TTL", async () => {
        const prefix = "shared:";
        const [one, two] = [await open({ maxCount: 10, maxBytes: 1 << 20, ttlMs: 60_000 }, prefix), await open({ maxCount: 10, maxBytes: 1 << 20, ttlMs: 60_000 }, prefix)];
        await one.put(stored("a"));
        assert.deepEqual(await two.get("a"), stored("a"));
        assert.equal((await two.item("msg_a"))?.["id"], "msg_a");
        const client = createClient({ url: redis.url });
        await client.connect();
        const ttl = await client.pTTL(`${prefix}r:a`);
        await client.close();
        assert.ok(ttl > 0 && ttl <= 60_000, `PTTL ${ttl}`);
        assert.equal(await two.delete("a"), true);
        assert.equal(await one.get("a"), undefined);
    });

    it("drops every key of an evicted, replaced or deleted response, and its byte count with it", async () => {
        const prefix = `keys:${randomBytes(4).toString("hex")}:`;
        const response = (id: string, suffix = ""): StoredResponse => ({
            id, response: { id, output: [
                { id: `rs_${id}${suffix}`, type: "reasoning", summary: [] },
                { id: `msg_${id}${suffix}`, type: "message", content: [{ type: "output_text", text: "x".repeat(200) }] }
            ] }, inputItems: [], conversation: []
        });
        const maxBytes = JSON.stringify(response("r0")).length * 4 + 100;
        const store = await open({ maxCount: 100, maxBytes, ttlMs: 60_000 }, prefix);
        const ids = Array.from({ length: 12 }, (_, index) => `r${index}`);
        for (const id of ids) await store.put(response(id));
        // Stored again with other items (a cancelled response is), and one deleted.
        await store.put(response("r11", "_again"));
        assert.equal(await store.delete("r10"), true);

        const kept = ["r8", "r9", "r11"];
        assert.deepEqual(await Promise.all(ids.map(async (id) => await store.get(id) !== undefined)), ids.map((id) => kept.includes(id)));
        const client = createClient({ url: redis.url });
        await client.connect();
        try {
            const keys: string[] = [];
            for await (const batch of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 100 })) keys.push(...batch.map((key) => key.slice(prefix.length)));
            const itemKeys = kept.flatMap((id) => {
                const suffix = id === "r11" ? "_again" : "";
                return [`i:rs_${id}${suffix}`, `i:msg_${id}${suffix}`];
            });
            assert.deepEqual(keys.filter((key) => key.startsWith("i:")).sort(), itemKeys.sort(), "no item key outlives its response");
            assert.deepEqual(keys.filter((key) => key.startsWith("r:")).sort(), kept.map((id) => `r:${id}`).sort());
            const bytes = Number(await client.get(`${prefix}bytes`));
            const lengths = await Promise.all(kept.map((id) => client.strLen(`${prefix}r:${id}`)));
            assert.equal(bytes, lengths.reduce((sum, length) => sum + length, 0), "the byte count is the kept responses' sizes");
            assert.ok(bytes <= maxBytes, `${bytes} bytes stored, bound ${maxBytes}`);
            assert.deepEqual((await client.hKeys(`${prefix}sizes`)).sort(), [...kept].sort());
            assert.deepEqual((await client.hKeys(`${prefix}items`)).sort(), [...kept].sort());
        } finally {
            await client.close();
        }
    });

    it("relays a cancel to the replica running the response, and says so when none does", async () => {
        const prefix = "cancel:";
        const [asker, runner] = [await open({ maxCount: 10, maxBytes: 1 << 20, ttlMs: 60_000 }, prefix), await open({ maxCount: 10, maxBytes: 1 << 20, ttlMs: 60_000 }, prefix)];
        asker.onCancelRequest(() => undefined);
        let cancelled: string | undefined;
        runner.onCancelRequest((id) => {
            if (id !== "resp_running") return undefined;
            cancelled = id;
            return { id, status: "cancelled" };
        });
        // Subscriptions follow the connection: until the runner listens, nobody answers yes.
        const answer = await waitFor(() => asker.cancelElsewhere("resp_running"), "the runner to answer a cancel");
        assert.deepEqual(answer, { id: "resp_running", status: "cancelled" });
        assert.equal(cancelled, "resp_running");
        assert.equal(await asker.cancelElsewhere("resp_nowhere"), undefined);
    });

    it("refuses fast while Redis is down, reconnects by itself, and keeps what it confirmed", async () => {
        const store = await open({ maxCount: 10, maxBytes: 1 << 20, ttlMs: 600_000 });
        await store.put(stored("kept"));
        await redis.stop();
        await waitFor(() => (store.state === "unreachable" ? true : undefined), "the store to notice");
        assert.throws(() => store.requireAvailable(), StoreUnavailableError);
        await assert.rejects(store.put(stored("lost")), StoreUnavailableError);
        await assert.rejects(store.get("kept"), StoreUnavailableError);
        await redis.start();
        await waitFor(() => (store.state === "ready" ? true : undefined), "the store to reconnect", 30_000);
        assert.deepEqual(await store.get("kept"), stored("kept"), "a confirmed write survives Redis's restart");
        assert.equal(await store.get("lost"), undefined);
    });

    it("fails a command Redis does not answer within its timeout (a hung server), then serves again", async () => {
        const store = await open({ maxCount: 10, maxBytes: 1 << 20, ttlMs: 600_000 });
        redis.pause();
        try {
            await assert.rejects(store.put(stored("unanswered")), StoreUnavailableError);
        } finally {
            redis.resume();
        }
        await waitFor(async () => (await store.get("anything").then(() => true, () => undefined)), "the store to answer again");
        await store.put(stored("answered"));
        assert.deepEqual(await store.get("answered"), stored("answered"));
    });

    it("starts before Redis does: connecting, refusing, then ready by itself", async () => {
        await redis.stop();
        const store = new RedisResponseStore({ url: redis.url, limits: { maxCount: 10, maxBytes: 1 << 20, ttlMs: 60_000 }, logger: pino({ level: "silent" }), timeoutMs: 1000 });
        stores.push(store);
        assert.equal(store.state, "connecting");
        await assert.rejects(store.get("x"), StoreUnavailableError);
        await redis.start();
        await waitFor(() => (store.state === "ready" ? true : undefined), "the store to connect", 30_000);
        await store.put(stored("late"));
        assert.deepEqual(await store.get("late"), stored("late"));
    });
});

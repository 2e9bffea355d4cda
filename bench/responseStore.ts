import { parseArgs } from "node:util";
import pino from "pino";
import { MemoryResponseStore } from "../src/responses/memoryResponseStore.js";
import { RedisResponseStore } from "../src/responses/redisResponseStore.js";
import type { ResponseStore, StoredResponse } from "../src/responses/responseStore.js";
import { startRedisServer } from "../test/fleet/redisServer.js";
import { waitFor } from "../test/helpers/waitFor.js";
import { median, percentile } from "./shared.js";

/**
 * What a shared response store adds per stored response: a `put` (what a `store: true` response
 * waits for before it is answered) and a `get` (what a `previous_response_id` continuation reads
 * first), memory store against Redis on loopback (a real redis-server, AOF fsynced on every write
 * with `--durable`, as the fleet tests and deploy/kubernetes/redis.yaml run it), on a stored
 * conversation of `--turns` turns, in interleaved rounds.
 *
 *   node dist/bench/responseStore.js --rounds 500 --turns 8 --durable
 */

const { values } = parseArgs({
    options: {
        rounds: { type: "string", default: "500" },
        turns: { type: "string", default: "8" },
        "turn-chars": { type: "string", default: "1500" },
        durable: { type: "boolean", default: false }
    }
});
const rounds = Number(values.rounds);
const turns = Number(values.turns);
const turnChars = Number(values["turn-chars"]);

/** A response at the end of a conversation of `turns` turns, as the route stores it. */
function conversationResponse(id: string): StoredResponse {
    const text = "lorem ipsum dolor sit amet ".repeat(Math.ceil(turnChars / 27)).slice(0, turnChars);
    const conversation = Array.from({ length: turns }, (_, turn) => [
        { role: "user" as const, content: `turn ${turn}: ${text}` },
        { role: "assistant" as const, content: `answer ${turn}: ${text}`, reasoningContent: text }
    ]).flat();
    const output = [
        { id: `rs_${id}`, type: "reasoning", status: "completed", summary: [{ type: "summary_text", text }], content: [{ type: "reasoning_text", text }] },
        { id: `msg_${id}`, type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text, annotations: [] }] }
    ];
    return {
        id,
        response: { id, object: "response", status: "completed", output, usage: { input_tokens: turns * 800, output_tokens: 400, total_tokens: turns * 800 + 400 } },
        inputItems: [{ id: `msg_in_${id}`, type: "message", role: "user", content: [{ type: "input_text", text }] }],
        conversation
    };
}

async function time(run: () => Promise<unknown>): Promise<number> {
    const start = performance.now();
    await run();
    return performance.now() - start;
}

const redis = await startRedisServer({ durable: values.durable === true });
const limits = { maxCount: 1_000_000, maxBytes: 1 << 30, ttlMs: 3_600_000 };
const memory = new MemoryResponseStore(limits);
const shared = new RedisResponseStore({ url: redis.url, limits, logger: pino({ level: "silent" }) });
await waitFor(() => (shared.state === "ready" ? true : undefined), "Redis");
const stores: Record<string, ResponseStore> = { memory, redis: shared };
const timings: Record<string, { put: number[]; get: number[] }> = { memory: { put: [], get: [] }, redis: { put: [], get: [] } };
const bytes = JSON.stringify(conversationResponse("resp_size")).length;
try {
    // A warm-up round per store (connections, script cache, JIT), not counted.
    for (const store of Object.values(stores)) {
        await store.put(conversationResponse("resp_warm"));
        await store.get("resp_warm");
    }
    for (let round = 0; round < rounds; round += 1) {
        const order = round % 2 === 0 ? ["memory", "redis"] : ["redis", "memory"];
        for (const name of order) {
            const id = `resp_${name}_${round}`;
            const stored = conversationResponse(id);
            timings[name]!.put.push(await time(() => stores[name]!.put(stored)));
            timings[name]!.get.push(await time(() => stores[name]!.get(id)));
        }
    }
} finally {
    await shared.close();
    await redis.destroy();
}
const row = (name: string, what: "put" | "get"): string => {
    const values = timings[name]![what];
    return `${name} ${what}: median ${median(values).toFixed(3)} ms, p99 ${percentile(values, 0.99).toFixed(3)} ms`;
};
console.log(`stored response ${(bytes / 1024).toFixed(1)} KiB (${turns} turns), ${rounds} rounds, Redis on loopback${values.durable === true ? ", AOF fsync always" : ", no persistence"}`);
for (const name of ["memory", "redis"]) for (const what of ["put", "get"] as const) console.log(`  ${row(name, what)}`);
const added = median(timings.redis!.put) - median(timings.memory!.put);
const addedRead = median(timings.redis!.get) - median(timings.memory!.get);
console.log(`added per stored response (put): ${added.toFixed(3)} ms; per continuation (get): ${addedRead.toFixed(3)} ms (medians)`);

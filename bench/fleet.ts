import { parseArgs } from "node:util";
import { chat, startHaproxy, startReplicas, stopReplicas, type ChatOutcome } from "../test/fleet/harness.js";

/**
 * A bounded load through HAProxy (deploy/haproxy/haproxy.cfg) in front of three `maple serve`
 * replicas (synthetic maple-tiny, one thread each): `--requests` chat completions from
 * `--concurrency` clients, half of them conversations with a key (several turns each), half
 * without. Prints the request count, end-to-end latency p50/p99, failures, and the retries and
 * redispatches HAProxy counted (its stats socket). A small `--queue-depth` makes replicas refuse
 * under the burst, so the retries show.
 *
 *   node dist/bench/fleet.js --requests 120 --concurrency 12 --queue-depth 2
 */

const { values } = parseArgs({
    options: {
        requests: { type: "string", default: "120" },
        concurrency: { type: "string", default: "12" },
        "queue-depth": { type: "string", default: "2" },
        turns: { type: "string", default: "3" }
    }
});
const requests = Number(values.requests);
const concurrency = Number(values.concurrency);
const turns = Number(values.turns);

function percentile(sorted: readonly number[], fraction: number): number {
    if (sorted.length === 0) return NaN;
    return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

const replicas = await startReplicas(3, () => ({ MAPLE_MAX_QUEUE_DEPTH: values["queue-depth"]! }));
const balancer = await startHaproxy(replicas);
const latencies: number[] = [];
const failures: ChatOutcome[] = [];
const byReplica = new Map<string, number>();
let cachedTokens = 0;
let next = 0;
try {
    const startedAt = performance.now();
    await Promise.all(Array.from({ length: concurrency }, async (_, client) => {
        // Each client alternates: a keyed conversation of `turns` turns, then as many requests without a key.
        const messages: { role: string; content: string }[] = [];
        for (let sent = 0; next < requests; sent += 1) {
            const index = next++;
            const keyed = Math.floor(sent / turns) % 2 === 0;
            if (sent % turns === 0) messages.length = 0;
            messages.push({ role: "user", content: `Client ${client} request ${index}: ${"tell me more. ".repeat(8)}` });
            const answer = `answer ${index} `.repeat(4).trim();
            const began = performance.now();
            const outcome = await chat(balancer.url, {
                messages: keyed ? messages : [messages.at(-1)!], answer, stream: true,
                ...(keyed ? { key: { value: `bench-${client}-${Math.floor(sent / turns)}`, in: "header" as const } } : {})
            });
            latencies.push(performance.now() - began);
            if (!outcome.ok) failures.push(outcome);
            else {
                byReplica.set(outcome.replica ?? "?", (byReplica.get(outcome.replica ?? "?") ?? 0) + 1);
                cachedTokens += outcome.usage?.prompt_tokens_details?.cached_tokens ?? 0;
            }
            if (keyed) messages.push({ role: "assistant", content: answer });
        }
    }));
    const seconds = (performance.now() - startedAt) / 1000;
    const stats = await balancer.stats();
    const sorted = [...latencies].sort((a, b) => a - b);
    const affinity = stats.filter((row) => row.backend === "maple_affinity");
    const spread = stats.filter((row) => row.backend === "maple_spread");
    const sum = (rows: typeof stats, pick: (row: (typeof stats)[number]) => number): number => rows.reduce((total, row) => total + pick(row), 0);
    console.log(JSON.stringify({
        requests: latencies.length,
        concurrency,
        queueDepth: Number(values["queue-depth"]),
        seconds: Math.round(seconds * 10) / 10,
        p50Ms: Math.round(percentile(sorted, 0.5)),
        p99Ms: Math.round(percentile(sorted, 0.99)),
        failures: failures.length,
        failureReasons: failures.slice(0, 5).map((failure) => failure.failure),
        haproxyRetries: sum(stats, (row) => row.retries),
        haproxyRedispatches: sum(stats, (row) => row.redispatches),
        retriesByBackend: { affinity: sum(affinity, (row) => row.retries + row.redispatches), spread: sum(spread, (row) => row.retries + row.redispatches) },
        answeredBy: Object.fromEntries([...byReplica].sort()),
        cachedPromptTokens: cachedTokens
    }, null, 2));
} finally {
    await balancer.stop();
    await stopReplicas(replicas);
}

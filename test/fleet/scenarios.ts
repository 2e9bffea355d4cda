import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { waitFor } from "../helpers/waitFor.js";
import { cachedOf, responsesTurn, send } from "./conversationScenarios.js";
import {
    chat, replicaMetrics, spawnReplica, startReplicas, stopReplicas, waitHealthy,
    type Balancer, type ChatOutcome, type ChatRequest, type Replica
} from "./harness.js";

/**
 * The fleet's promises, on three real Maple replicas behind a real balancer running the shipped
 * configuration: cache affinity by key, spreading without one, and no request lost to a full
 * queue, a drain, a crash (beyond the streams the crashed replica was serving) or a restart.
 * The scenarios run in order on one fleet: later ones stop and restart replicas.
 */
export function fleetScenarios(kind: Balancer["kind"], startBalancer: (replicas: readonly Replica[]) => Promise<Balancer>): void {
    describe(`three Maple replicas behind ${kind}`, () => {
        let replicas: Replica[];
        let balancer: Balancer;
        const replicaNamed = (name: string): Replica => replicas.find((replica) => replica.name === name)!;

        before(async () => {
            // A small queue, so one replica's queue fills in the queue scenario (and only there).
            replicas = await startReplicas(3, () => ({ MAPLE_MAX_QUEUE_DEPTH: "4" }));
            balancer = await startBalancer(replicas);
        });
        after(async () => {
            await balancer?.stop();
            await stopReplicas(replicas ?? []);
        });

        it("keeps each conversation on one replica (12 conversations × 3 turns), which serves later turns from its cache", async () => {
            const places = ["header", "prompt_cache_key", "user"] as const;
            const converse = async (index: number): Promise<ChatOutcome[]> => {
                const key = { value: `conversation-${index}-${kind}`, in: places[index % places.length]! };
                const messages: { role: string; content: string }[] = [];
                const turns: ChatOutcome[] = [];
                for (let turn = 0; turn < 3; turn += 1) {
                    // Conversation-specific text from the first token on, so only the right replica's cache matches more than the template.
                    messages.push({ role: "user", content: `Conversation ${index} (${key.value}), turn ${turn}: ${"please remember this. ".repeat(6)}` });
                    const answer = `noted ${index}.${turn}`;
                    const outcome = await chat(balancer.url, { messages, answer, key, stream: turn === 1 });
                    assert.ok(outcome.ok, `conversation ${index} turn ${turn}: ${outcome.failure}`);
                    assert.equal(outcome.text, answer);
                    turns.push(outcome);
                    messages.push({ role: "assistant", content: answer });
                }
                return turns;
            };
            // Three conversations at a time: fewer than a replica's 4 slots plus its queue, so none is
            // refused (a refusal is retried on another replica, which moves the conversation by design).
            const results: ChatOutcome[][] = [];
            for (let wave = 0; wave < 12; wave += 3) {
                results.push(...await Promise.all([0, 1, 2].map((offset) => converse(wave + offset))));
            }
            let laterTurns = 0;
            let laterCached = 0;
            // What any conversation shares with another (the template's first tokens): a first turn's cache hit.
            const sharedByAll = Math.max(...results.map((turns) => turns[0]!.usage?.prompt_tokens_details?.cached_tokens ?? 0));
            results.forEach((turns, index) => {
                const replica = turns[0]!.replica;
                assert.ok(replica !== undefined, "responses carry x-maple-replica");
                for (const [turn, outcome] of turns.entries()) {
                    assert.equal(outcome.replica, replica, `conversation ${index} turn ${turn} stayed on ${replica}`);
                    if (turn === 0) continue;
                    const cached = outcome.usage?.prompt_tokens_details?.cached_tokens ?? 0;
                    assert.ok(cached > 0, `conversation ${index} turn ${turn}: cached_tokens ${cached}`);
                    laterTurns += 1;
                    laterCached += cached;
                }
            });
            // Later turns reuse their own conversation, well beyond what conversations share (a slot may
            // have been taken by another conversation in between, so this holds on average, not per turn).
            assert.ok(laterCached / laterTurns > 2 * sharedByAll, `later turns: ${laterCached / laterTurns} cached tokens each, first turns at most ${sharedByAll}`);
        });

        it("spreads requests without a key over all three replicas", async () => {
            const seen = new Set<string>();
            for (let index = 0; index < 12; index += 1) {
                const outcome = await chat(balancer.url, { messages: [{ role: "user", content: `No key ${index}` }], answer: "spread" });
                assert.ok(outcome.ok, outcome.failure);
                seen.add(outcome.replica!);
            }
            assert.deepEqual([...seen].sort(), replicas.map((replica) => replica.name).sort());
        });

        it("keeps a Responses conversation by previous_response_id alone on its replica, whose memory store continues it (8 of 8 turns)", async () => {
            let previous: string | undefined;
            const seen = new Set<string | undefined>();
            for (let turn = 0; turn < 8; turn += 1) {
                const answer = await send(balancer.url, "/v1/responses", responsesTurn(`memory-${kind} turn ${turn}`, previous));
                assert.equal(answer.status, 200, `turn ${turn}: ${JSON.stringify(answer.body)}`);
                if (turn > 0) assert.ok(cachedOf(answer) > 0, `turn ${turn} cached`);
                seen.add(answer.replica);
                previous = answer.body["id"] as string;
            }
            assert.equal(seen.size, 1, `one replica: ${[...seen].join(", ")}`);
            assert.equal((await send(balancer.url, `/v1/responses/${previous!}`)).status, 200, "GET finds it on its replica");
        });

        it("retries a full replica's 503s on the others: the client sees none", async () => {
            const key = { value: `busy-${kind}`, in: "header" as const };
            const first = await chat(balancer.url, { messages: [{ role: "user", content: "Which replica?" }], answer: "this one", key });
            assert.ok(first.ok, first.failure);
            const busy = replicaNamed(first.replica!);
            const rejectedBefore = (await replicaMetrics(busy)).value("maple:request_rejections_total", { reason: "queue_full" });
            // Fourteen at once on one key: its replica runs 4 and queues 4 (MAPLE_MAX_QUEUE_DEPTH=4); the rest are refused there.
            const outcomes = await Promise.all(Array.from({ length: 14 }, (_, index) => chat(balancer.url, {
                messages: [{ role: "user", content: `Burst ${index}` }], answer: "busy ".repeat(12).trim(), key, stream: true
            })));
            for (const outcome of outcomes) assert.ok(outcome.ok, outcome.failure);
            const rejected = (await replicaMetrics(busy)).value("maple:request_rejections_total", { reason: "queue_full" }) - rejectedBefore;
            assert.ok(rejected > 0, "the busy replica refused some requests");
            const elsewhere = outcomes.filter((outcome) => outcome.replica !== busy.name).length;
            assert.ok(elsewhere >= rejected, `${rejected} refused by ${busy.name}, ${elsewhere} answered elsewhere`);
            if (kind === "haproxy") {
                const stats = await balancer.stats();
                const redispatched = stats.reduce((total, row) => total + row.redispatches + row.retries, 0);
                assert.ok(redispatched > 0, `haproxy counted the retries: ${JSON.stringify(stats)}`);
            }
        });

        it("drains a replica on SIGTERM under steady load: zero failures, its in-flight streams finish", async () => {
            const victim = replicas[0]!;
            let signalled = false;
            let inFlightAtSignal = 0;
            const { outcomes } = await steadyLoad(balancer.url, 4, (index) => ({
                messages: [{ role: "user", content: `Steady ${index}` }],
                answer: "steady ".repeat(6).trim(),
                key: { value: `steady-${index}`, in: "header" },
                stream: true,
                onHead: (replica) => {
                    if (replica === victim.name && !signalled) {
                        signalled = true;
                        inFlightAtSignal += 1;
                        victim.child.kill("SIGTERM");
                    }
                }
            }), async () => {
                await waitFor(() => (signalled ? true : undefined), "a stream on the replica to stop", 60_000);
                const [code] = await victim.exited;
                assert.equal(code, 0, victim.output());
            });
            assert.equal(inFlightAtSignal, 1);
            const failures = outcomes.filter((outcome) => !outcome.ok);
            assert.deepEqual(failures.map((outcome) => outcome.failure), [], "no request failed");
            assert.ok(outcomes.some((outcome) => outcome.replica === victim.name), "the stopped replica finished what it had");
        });

        it("on SIGKILL mid-stream, fails only the streams that replica was serving; the next requests succeed", async () => {
            const victim = replicas[1]!;
            let killed = false;
            const { records } = await steadyLoad(balancer.url, 4, (index) => ({
                messages: [{ role: "user", content: `Crash ${index}` }],
                answer: "crash ".repeat(24).trim(),
                key: { value: `crash-${index}`, in: "header" },
                stream: true,
                onHead: (replica) => {
                    if (replica === victim.name && !killed) {
                        killed = true;
                        victim.child.kill("SIGKILL");
                    }
                }
            }), async () => {
                await waitFor(() => (killed ? true : undefined), "a stream on the replica to crash", 60_000);
                await victim.exited;
            });
            const failures = records.filter((record) => !record.outcome.ok);
            assert.ok(failures.length > 0, "the crashed replica's stream failed visibly");
            for (const failure of failures) {
                assert.equal(failure.outcome.replica, victim.name, `only streams of the crashed replica fail: ${failure.outcome.failure}`);
                assert.ok(!failure.startedAfterEvent, "no request started after the crash failed");
            }
            assert.ok(records.filter((record) => record.startedAfterEvent).every((record) => record.outcome.ok));
        });

        it("sends nothing to a restarting replica until its /health is ok", async () => {
            // The drained replica comes back on its port: loading first, then ready.
            const stopped = replicas[0]!;
            const restarted = spawnReplica(stopped.name, stopped.port, { MAPLE_MAX_QUEUE_DEPTH: "4" });
            replicas[0] = restarted;
            let sawLoading = false;
            const { outcomes } = await steadyLoad(balancer.url, 4, (index) => ({
                messages: [{ role: "user", content: `Restart ${index}` }],
                answer: "restart",
                key: { value: `restart-${index}`, in: "header" }
            }), async () => {
                await waitFor(async () => {
                    const health = await fetch(`${restarted.url}/health`).catch(() => undefined);
                    const status = health === undefined ? undefined : (await health.json() as { status: string }).status;
                    if (status === "loading") sawLoading = true;
                    return status === "ok" ? true : undefined;
                }, "the restarted replica to load", 300_000);
            });
            await waitHealthy(restarted);
            assert.deepEqual(outcomes.filter((outcome) => !outcome.ok).map((outcome) => outcome.failure), [], "no request failed");
            const rejectedWhileLoading = (await replicaMetrics(restarted)).value("maple:request_rejections_total", { reason: "model_loading" });
            if (kind === "haproxy") {
                // Its health checks kept it out until /health said ok.
                assert.equal(rejectedWhileLoading, 0, `requests reached it while loading (loading seen: ${sawLoading})`);
            } else {
                // Open-source nginx checks passively: it may try the loading replica, whose 503 is retried elsewhere.
                assert.ok(rejectedWhileLoading >= 0);
            }
            if (kind === "haproxy") {
                await waitFor(async () => ((await balancer.stats()).filter((row) => row.server === restarted.name).every((row) => row.status === "UP") ? true : undefined),
                    "haproxy to take the restarted replica back");
            }
        });
    });
}

interface LoadRecord {
    outcome: ChatOutcome;
    /** Whether the request started after `during` returned (after the event it waits for). */
    startedAfterEvent: boolean;
}

/**
 * `clients` loops sending requests one after another until `during` has returned and each loop has
 * sent two more: steady load across an event, bounded in requests.
 */
async function steadyLoad(baseUrl: string, clients: number, request: (index: number) => ChatRequest,
    during: () => Promise<void>): Promise<{ outcomes: ChatOutcome[]; records: LoadRecord[] }> {
    const records: LoadRecord[] = [];
    let eventOver = false;
    let next = 0;
    const loop = async (): Promise<void> => {
        let afterEvent = 0;
        while (afterEvent < 2 && next < 400) {
            const startedAfterEvent = eventOver;
            const outcome = await chat(baseUrl, request(next++));
            records.push({ outcome, startedAfterEvent });
            if (startedAfterEvent) afterEvent += 1;
        }
    };
    const loops = Array.from({ length: clients }, () => loop());
    try {
        await during();
    } finally {
        eventOver = true;
        await Promise.all(loops);
    }
    return { outcomes: records.map((record) => record.outcome), records };
}

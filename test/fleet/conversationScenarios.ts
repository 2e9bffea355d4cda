import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { waitFor } from "../helpers/waitFor.js";
import { startReplicas, stopReplicas, type Balancer, type Replica } from "./harness.js";
import { startRedisServer, type RedisServer } from "./redisServer.js";

/** One request through the balancer, as the client saw it. */
export interface Answer {
    status: number;
    replica: string | undefined;
    body: Record<string, unknown>;
    retryAfter: string | null;
}

export async function send(baseUrl: string, path: string, body?: unknown, method = body === undefined ? "GET" : "POST"): Promise<Answer> {
    const response = await fetch(`${baseUrl}${path}`, {
        method, ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
    });
    const text = await response.text();
    return {
        status: response.status, replica: response.headers.get("x-maple-replica") ?? undefined,
        body: text === "" ? {} : JSON.parse(text) as Record<string, unknown>, retryAfter: response.headers.get("retry-after")
    };
}

const filler = "please keep this in mind. ".repeat(4);

/** A Responses turn with an exact answer (thinking off), continued only by `previous_response_id`. */
export function responsesTurn(input: string, previous: string | undefined, extra: Record<string, unknown> = {}): Record<string, unknown> {
    const answer = `noted: ${input.slice(0, 12)}`;
    return {
        input: `${input} ${filler}`, max_output_tokens: 24, reasoning: { effort: "none" }, grammar: `root ::= ${JSON.stringify(answer)}`,
        ...(previous === undefined ? {} : { previous_response_id: previous }), ...extra
    };
}

export const cachedOf = (answer: Answer): number => ((answer.body["usage"] as { input_tokens_details?: { cached_tokens?: number } } | undefined)?.input_tokens_details?.cached_tokens ?? 0);

/** Waits until every live replica's /health says its response store is `state`. */
async function storeIs(replicas: readonly Replica[], state: string): Promise<void> {
    for (const replica of replicas.filter((one) => one.child.exitCode === null && one.child.signalCode === null)) {
        await waitFor(async () => {
            const health = await (await fetch(`${replica.url}/health`)).json() as Record<string, unknown>;
            return health["responses_store"] === state ? true : undefined;
        }, `${replica.name}'s store to be ${state}`, 30_000);
    }
}

/**
 * Conversations behind the shipped balancer configuration with the response store in a real
 * redis-server: Responses conversations by previous_response_id alone, Anthropic conversations by
 * metadata.user_id alone, bodies past 1 MiB with their key last, Redis stopped and restarted, and
 * the loss of the replica holding a conversation. In order, on one fleet of three replicas.
 */
export function conversationScenarios(kind: Balancer["kind"], startBalancer: (replicas: readonly Replica[]) => Promise<Balancer>): void {
    describe(`conversations on three replicas behind ${kind}, the response store in Redis`, () => {
        let redis: RedisServer;
        let replicas: Replica[];
        let balancer: Balancer;
        before(async () => {
            redis = await startRedisServer({ durable: true });
            replicas = await startReplicas(3, () => ({ MAPLE_RESPONSES_STORE: redis.url }));
            await storeIs(replicas, "ready");
            balancer = await startBalancer(replicas);
        });
        after(async () => {
            await balancer?.stop();
            await stopReplicas(replicas ?? []);
            await redis?.destroy();
        });

        /** `turns` turns by previous_response_id alone; every turn must succeed. */
        const converse = async (name: string, turns: number, first?: string): Promise<Answer[]> => {
            const answers: Answer[] = [];
            let previous = first;
            for (let turn = 0; turn < turns; turn += 1) {
                const answer = await send(balancer.url, "/v1/responses", responsesTurn(`${name} turn ${turn}`, previous));
                assert.equal(answer.status, 200, `${name} turn ${turn}: ${JSON.stringify(answer.body)}`);
                answers.push(answer);
                previous = answer.body["id"] as string;
            }
            return answers;
        };

        it("a Responses conversation of 8 turns by previous_response_id alone: every turn on one replica, later turns cached; GET and DELETE of each response", async () => {
            const turns = await converse(`solo-${kind}`, 8);
            const replica = turns[0]!.replica;
            assert.deepEqual(turns.map((turn) => turn.replica), turns.map(() => replica), "every turn on the conversation's replica");
            const firstPrompt = (turns[0]!.body["usage"] as { input_tokens: number }).input_tokens;
            for (const [index, turn] of turns.entries()) {
                if (index > 0) assert.ok(cachedOf(turn) > firstPrompt / 2, `turn ${index}: ${cachedOf(turn)} cached tokens, the first turn's prompt was ${firstPrompt}`);
            }
            for (const turn of turns) {
                const read = await send(balancer.url, `/v1/responses/${turn.body["id"] as string}`);
                assert.equal(read.status, 200);
                assert.equal(read.body["id"], turn.body["id"]);
            }
            const last = turns.at(-1)!.body["id"] as string;
            assert.equal((await send(balancer.url, `/v1/responses/${last}`, undefined, "DELETE")).body["deleted"], true);
            assert.equal((await send(balancer.url, `/v1/responses/${last}`)).status, 404);
        });

        /**
         * A 4-turn conversation that resends its messages; `body` adds the route's fields around them.
         * Every turn must succeed and stay on the first turn's replica; later turns must reuse more
         * than half of the first turn's prompt (`prompt`: a turn's prompt and cached token counts).
         */
        const resent = async (path: string, opening: string, body: (messages: unknown[], text: string) => Record<string, unknown>,
            prompt: (answer: Answer) => { total: number; cached: number }): Promise<void> => {
            const messages: { role: string; content: string }[] = [];
            const turns: Answer[] = [];
            for (let turn = 0; turn < 4; turn += 1) {
                messages.push({ role: "user", content: `${opening}, turn ${turn}: ${filler}` });
                const text = `said ${turn}`;
                const answer = await send(balancer.url, path, body(messages, text));
                assert.equal(answer.status, 200, JSON.stringify(answer.body));
                turns.push(answer);
                messages.push({ role: "assistant", content: text });
            }
            const firstPrompt = prompt(turns[0]!).total;
            for (const [index, turn] of turns.entries()) {
                assert.equal(turn.replica, turns[0]!.replica, `turn ${index} on the conversation's replica`);
                if (index > 0) assert.ok(prompt(turn).cached > firstPrompt / 2, `turn ${index}: ${prompt(turn).cached} cached, first prompt ${firstPrompt}`);
            }
        };

        it("an Anthropic conversation keyed only by metadata.user_id: every later turn on its replica, a cache hit", async () => {
            await resent("/v1/messages", `Claude session ${kind}`, (messages, text) => ({
                model: "maple-preview", max_tokens: 24, messages, grammar: `root ::= ${JSON.stringify(`ok\n</think>\n\n${text}`)}`,
                metadata: { user_id: `user_${kind}_account__session_7f3a` }
            }), (answer) => {
                const usage = answer.body["usage"] as { input_tokens: number; cache_read_input_tokens: number };
                return { total: usage.input_tokens + usage.cache_read_input_tokens, cached: usage.cache_read_input_tokens };
            });
        });

        it("a conversation whose body is past 1 MiB with its key last: every later turn on its replica, a cache hit", async () => {
            // The context is 1024 tokens here, so the bulk is a field Maple ignores, before the key as
            // in agents' bodies (Claude Code sends metadata after messages).
            const bulk = "x".repeat(1_200_000);
            await resent("/v1/chat/completions", `Big body ${kind}`, (messages, text) => ({
                messages, max_tokens: 16, chat_template_kwargs: { enable_thinking: false }, grammar: `root ::= ${JSON.stringify(text)}`,
                agent_transcript: bulk, prompt_cache_key: `big-${kind}`
            }), (answer) => {
                const usage = answer.body["usage"] as { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
                return { total: usage.prompt_tokens, cached: usage.prompt_tokens_details.cached_tokens };
            });
        });

        it("Redis stopped mid-conversation: clear 503s for what needs it, the rest served; restarted: the conversation goes on, nothing acknowledged lost", async () => {
            const before = await converse(`outage-${kind}`, 2);
            await redis.stop();
            await storeIs(replicas, "unreachable");
            const refused = await send(balancer.url, "/v1/responses", responsesTurn("during the outage", before[1]!.body["id"] as string));
            assert.equal(refused.status, 503, JSON.stringify(refused.body));
            assert.equal((refused.body["error"] as { code: string }).code, "store_unavailable");
            assert.ok(Number(refused.retryAfter) > 0, "Retry-After");
            const stored = await send(balancer.url, "/v1/responses", responsesTurn("new, stored", undefined));
            assert.equal(stored.status, 503);
            const unstored = await send(balancer.url, "/v1/responses", responsesTurn("new, not stored", undefined, { store: false }));
            assert.equal(unstored.status, 200, JSON.stringify(unstored.body));
            const chat = await send(balancer.url, "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_tokens: 4 });
            assert.equal(chat.status, 200);
            await redis.start();
            await storeIs(replicas, "ready");
            for (const turn of before) assert.equal((await send(balancer.url, `/v1/responses/${turn.body["id"] as string}`)).status, 200, "an acknowledged response survived");
            const resumed = await converse(`outage-${kind}`, 2, before[1]!.body["id"] as string);
            assert.ok(resumed.every((turn) => turn.replica === before[0]!.replica), "the conversation kept its replica");
        });

        it("SIGKILL of the replica holding a conversation: its next turn succeeds on another replica", async () => {
            const turns = await converse(`survivor-${kind}`, 3);
            const holder = replicas.find((replica) => replica.name === turns[0]!.replica)!;
            holder.child.kill("SIGKILL");
            await holder.exited;
            const next = await converse(`survivor-${kind}`, 2, turns.at(-1)!.body["id"] as string);
            assert.ok(next.every((turn) => turn.replica !== holder.name && turn.replica !== undefined), "answered by the others");
        });
    });
}

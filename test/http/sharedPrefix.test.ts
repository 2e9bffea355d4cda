import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { MapleConfig } from "../../src/config/settings.js";
import { Exposition } from "../helpers/prometheus.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { waitFor } from "../helpers/waitFor.js";

/**
 * Agent sessions start warm: sessions with the same system prompt and tools (a preamble of ~1k
 * tokens, far longer than maple-tiny's 128-token sliding window) and different first messages.
 * The first session's preamble state is saved as its prompt is evaluated, and a later session
 * restores it even after other conversations took every slot, or after a restart.
 */

interface ChatWire {
    choices: { message: { content: string | null; reasoning_content?: string | null } }[];
    usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
}

const words = ["river", "stone", "maple", "cloud", "amber", "field", "harbor", "lantern", "meadow", "copper", "signal", "orchard"];
/** `count` words of a deterministic text: a system prompt of about that many tokens. */
const text = (seed: number, count: number): string => Array.from({ length: count }, (_, index) => words[(seed * 7 + index * 5 + (index >> 3)) % words.length]).join(" ");

const agentSystem = `You are a coding agent. ${text(1, 800)}`;
const agentTools = [1, 2, 3].map((index) => ({
    type: "function",
    function: { name: `tool_${index}`, description: text(index + 10, 40), parameters: { type: "object", properties: { path: { type: "string", description: text(index + 20, 12) } } } }
}));

const session = (first: string): Record<string, unknown> => ({
    messages: [{ role: "system", content: agentSystem }, { role: "user", content: first }], tools: agentTools
});
/** Another agent kind's long conversation (its own preamble), which takes a slot. */
const other = (seed: number): Record<string, unknown> => ({
    messages: [{ role: "system", content: text(seed, 500) }, { role: "user", content: text(seed + 1, 300) }]
});

const chat = async (server: TestServer, body: Record<string, unknown>): Promise<ChatWire> => {
    const response = await server.post("/v1/chat/completions", { max_tokens: 8, temperature: 0, ignore_eos: true, ...body });
    assert.equal(response.status, 200, await response.clone().text());
    return response.json() as Promise<ChatWire>;
};
const cached = (completion: ChatWire): number => completion.usage.prompt_tokens_details.cached_tokens;
const metrics = async (server: TestServer): Promise<Exposition> => new Exposition(await (await server.request("/metrics")).text());
const serverOf = (overrides: Partial<MapleConfig> = {}): Promise<TestServer> =>
    startTestServer({ model: "synthetic:maple-tiny", parallel: 2, contextSize: 2048, cacheRamMiB: 64, ...overrides });

/** Tokens of the second session's own part: its prompt after the preamble (`<|im_start|>user\n`'s text, the generation prompt). */
const ownPart = 40;

describe("shared-prefix states (maple-tiny)", () => {
    let cold: ChatWire;
    before(async () => {
        // The second session's request on a server that has seen nothing.
        const server = await serverOf();
        try {
            cold = await chat(server, session("Now fix the failing test in src/lexer.ts."));
            assert.equal(cached(cold), 0);
        } finally {
            await server.close();
        }
    });

    it("a new session restores the preamble another session left, after other conversations took every slot", async () => {
        const server = await serverOf();
        try {
            const first = await chat(server, session("Rename the config loader."));
            assert.equal(cached(first), 0);
            await chat(server, other(40));
            await chat(server, other(50));
            const second = await chat(server, session("Now fix the failing test in src/lexer.ts."));
            assert.ok(second.usage.prompt_tokens > 900, `a long preamble (${second.usage.prompt_tokens} tokens)`);
            assert.ok(cached(second) >= second.usage.prompt_tokens - ownPart, `cached ${cached(second)} of ${second.usage.prompt_tokens}`);
            assert.deepEqual(second.choices[0]!.message, cold.choices[0]!.message, "greedy output equals a cold run's");
            const exposition = await metrics(server);
            // One entry per distinct preamble: the agent's, and each other conversation's own.
            assert.equal(exposition.value("maple:prompt_cache_preamble_saves_total", { tier: "ram" }), 3);
            assert.equal(exposition.value("maple:prompt_cache_preamble_restores_total", { tier: "ram" }), 1);
            // The same preamble once more: restored again, not saved again.
            await chat(server, other(60));
            await chat(server, other(70));
            const third = await chat(server, session("Add a --verbose flag."));
            assert.ok(cached(third) >= third.usage.prompt_tokens - ownPart);
            assert.equal((await metrics(server)).value("maple:prompt_cache_preamble_saves_total", { tier: "ram" }), 5);
        } finally {
            await server.close();
        }
    });

    describe("after a restart", () => {
        let dir: string;
        before(async () => {
            dir = await mkdtemp(join(tmpdir(), "maple-preamble-cache-"));
        });
        after(async () => rm(dir, { recursive: true, force: true }));

        it("the disk tier serves the preamble to the next process's first session", async () => {
            const diskServer = (): Promise<TestServer> => serverOf({ cacheRamMiB: 0, cacheDir: dir, cacheDiskMiB: 64 });
            const first = await diskServer();
            try {
                await chat(first, session("Rename the config loader."));
                await waitFor(async () => ((await metrics(first)).value("maple:prompt_cache_preamble_saves_total", { tier: "disk" }) >= 1 ? true : undefined),
                    "the preamble's disk entry", 60_000);
            } finally {
                await first.close();
            }
            const second = await diskServer();
            try {
                const again = await chat(second, session("Now fix the failing test in src/lexer.ts."));
                assert.ok(cached(again) >= again.usage.prompt_tokens - ownPart, `cached ${cached(again)} of ${again.usage.prompt_tokens}`);
                assert.deepEqual(again.choices[0]!.message, cold.choices[0]!.message, "greedy output equals a cold run's");
                assert.equal((await metrics(second)).value("maple:prompt_cache_preamble_restores_total", { tier: "disk" }), 1);
            } finally {
                await second.close();
            }
        });
    });
});

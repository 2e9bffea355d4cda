import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { PromptCache } from "../../src/engine/promptCache/promptCache.js";
import { SlotCachePolicy } from "../../src/engine/slotCache/slotCachePolicy.js";
import type { SlotStore } from "../../src/engine/slotCache/slotStore.js";
import { StateCosts } from "../../src/engine/stateCosts.js";

/** Slots as token lists; a saved state is the token list as JSON (10 bytes a token, for the tier's bound). */
class FakeSlotStore implements SlotStore {
    readonly held: number[][];
    readonly saves: number[][] = [];
    loads = 0;

    constructor(readonly slots: number) {
        this.held = Array.from({ length: slots }, () => []);
    }

    tokens(slot: number): readonly number[] {
        return [...this.held[slot]!];
    }

    tokenCount(slot: number): number {
        return this.held[slot]!.length;
    }

    async save(slot: number, file: string): Promise<{ bytes: number; milliseconds: number }> {
        this.saves.push([...this.held[slot]!]);
        await writeFile(file, JSON.stringify(this.held[slot]));
        return { bytes: this.held[slot]!.length * 10, milliseconds: 0 };
    }

    async load(slot: number, file: string): Promise<{ tokens: readonly number[]; milliseconds: number }> {
        this.loads += 1;
        this.held[slot] = JSON.parse(await readFile(file, "utf8")) as number[];
        return { tokens: this.tokens(slot), milliseconds: 0 };
    }

    reusable(_slot: number, shared: number): number {
        return shared;
    }

    async evaluate(slot: number, tokens: readonly number[]): Promise<void> {
        await Promise.resolve();
        this.held[slot]!.push(...tokens);
    }

    async erase(slot: number, start: number): Promise<void> {
        await Promise.resolve();
        this.held[slot] = this.held[slot]!.slice(0, start);
    }
}

/** `length` tokens of a conversation: its own `first` token, then a shared run. */
function conversation(first: number, length: number): number[] {
    return [first, ...Array.from({ length: length - 1 }, (_, index) => 1000 + index)];
}

let root: string;
before(async () => {
    root = await mkdtemp(join(tmpdir(), "maple-slot-policy-test-"));
});
after(async () => {
    await rm(root, { recursive: true, force: true });
});

async function setUp(slots: number, options: { cache?: boolean; ramBytes?: number; slidingWindow?: number } = {}): Promise<{ store: FakeSlotStore; policy: SlotCachePolicy; cache: PromptCache | undefined }> {
    const store = new FakeSlotStore(slots);
    const cache = options.cache === false ? undefined : await PromptCache.open({
        ramBytes: options.ramBytes ?? 1_000_000, diskBytes: 0, identity: "test", maxTokens: 4096,
        slidingWindow: options.slidingWindow ?? 0, ramRoot: root
    });
    after(() => cache?.dispose());
    return { store, policy: new SlotCachePolicy({ store, cache, slidingWindow: options.slidingWindow ?? 0, costs: new StateCosts() }), cache };
}

describe("SlotCachePolicy: slot choice", () => {
    it("takes the least recently used of equally good slots", async () => {
        const { policy } = await setUp(3);
        assert.equal(policy.chooseSlot([2, 0, 1], [1, 2, 3], undefined), 2);
    });

    it("sends concurrent arrivals to empty slots rather than over each other's prefixes", async () => {
        const { store, policy } = await setUp(4);
        store.held[0] = conversation(1, 100);
        store.held[1] = conversation(2, 100);
        // Four requests arrive together: two new conversations, then the next turns of slots 0's and 1's.
        const free = [0, 1, 2, 3];
        const take = (prompt: number[]): number => {
            const slot = policy.chooseSlot(free, prompt, undefined);
            free.splice(free.indexOf(slot), 1);
            return slot;
        };
        const newOne = take(conversation(3, 50));
        const newTwo = take(conversation(4, 50));
        assert.deepEqual([newOne, newTwo].sort(), [2, 3]);
        assert.equal(take([...conversation(2, 100), 7, 7]), 1);
        assert.equal(take([...conversation(1, 100), 7, 7]), 0);
    });

    it("without a prompt cache, also leaves a held prefix to the request that shares it", async () => {
        const { store, policy } = await setUp(2, { cache: false });
        store.held[0] = conversation(1, 100);
        assert.equal(policy.chooseSlot([0, 1], conversation(5, 20), undefined), 1);
        assert.equal(policy.chooseSlot([0, 1], [...conversation(1, 100), 3], undefined), 0);
    });

    it("prefers the slot the conversation key used last when the slots are otherwise equal", async () => {
        const { store, policy } = await setUp(3);
        const prompt = conversation(1, 40);
        await policy.prepare(2, prompt, "session:tab-1", undefined);
        store.held[2] = [];
        assert.equal(policy.slotKey(2), "session:tab-1");
        assert.equal(policy.chooseSlot([0, 1, 2], [9, 9], "session:tab-1"), 2);
        assert.equal(policy.chooseSlot([0, 1, 2], [9, 9], "session:tab-2"), 0);
    });

    it("counts a saved state any slot can restore, and takes the slot cheapest to lose for it", async () => {
        const { store, policy, cache } = await setUp(3);
        // Slot 0's conversation is saved when slot 0 is reused for another.
        store.held[0] = conversation(1, 200);
        await policy.prepare(0, conversation(2, 40), undefined, undefined);
        assert.equal(cache!.longestMatch(conversation(1, 200), 200, undefined)?.shared, 200);
        store.held[0] = conversation(2, 40);
        store.held[1] = conversation(3, 100);
        // Slot 0 now holds conversation 2 (40 tokens, unsaved), slot 1 conversation 3 (100, unsaved), slot 2 nothing.
        assert.equal(policy.chooseSlot([0, 1, 2], [...conversation(1, 200), 5], undefined), 2);
        assert.equal(policy.chooseSlot([0, 1], [...conversation(1, 200), 5], undefined), 0);
    });
});

describe("SlotCachePolicy: saving", () => {
    it("saves a slot most of which is about to be erased, and not one the next prompt keeps", async () => {
        const { store, policy } = await setUp(1);
        store.held[0] = conversation(1, 100);
        // The same conversation's next turn keeps all of it: nothing saved.
        assert.equal((await policy.prepare(0, [...conversation(1, 100), 5, 6], undefined, undefined)).cached, 100);
        assert.equal(store.saves.length, 0);
        // A prompt that keeps more than half of it (an edited last turn): nothing saved, the rest erased.
        assert.equal((await policy.prepare(0, [...conversation(1, 51), 5, 5], undefined, undefined)).cached, 51);
        assert.equal(store.saves.length, 0);
        store.held[0] = conversation(1, 100);
        // Another conversation erases it: saved first.
        assert.equal((await policy.prepare(0, conversation(2, 30), undefined, undefined)).cached, 0);
        assert.deepEqual(store.saves.map((tokens) => tokens.length), [100]);
    });

    it("does not save fewer unsaved tokens than a restore must gain", async () => {
        const { store, policy } = await setUp(1);
        store.held[0] = conversation(1, 15);
        await policy.prepare(0, conversation(2, 30), undefined, undefined);
        assert.equal(store.saves.length, 0);
        store.held[0] = conversation(1, 16);
        await policy.prepare(0, conversation(2, 30), undefined, undefined);
        assert.equal(store.saves.length, 1);
    });

    it("does not save a state again while an entry holds it, and saves it again once that entry is evicted", async () => {
        // Room for one 100-token state (1,000 bytes) only.
        const { store, policy } = await setUp(2, { ramBytes: 1500 });
        store.held[0] = conversation(1, 100);
        await policy.prepare(0, conversation(2, 20), undefined, undefined);
        assert.equal((await policy.prepare(0, [...conversation(1, 100), 9], undefined, undefined)).cached, 100);
        assert.equal(store.saves.length, 1);
        // Slot 0 holds what its entry holds: reusing it loses nothing, unlike slot 1's unsaved tokens.
        store.held[1] = conversation(4, 100);
        assert.equal(policy.chooseSlot([1, 0], conversation(3, 20), undefined), 0);
        // Slot 1 is saved for another conversation: the tier evicts slot 0's entry for it.
        await policy.prepare(1, conversation(5, 20), undefined, undefined);
        assert.equal(store.saves.length, 2);
        assert.equal(policy.chooseSlot([0, 1], conversation(3, 20), undefined), 1);
        await policy.prepare(0, conversation(3, 20), undefined, undefined);
        assert.equal(store.saves.length, 3);
    });

    it("cuts a sliding-window slot back to where the next turn leaves the prompt, and saves it there", async () => {
        const { store, policy, cache } = await setUp(1, { slidingWindow: 8 });
        const prompt = conversation(1, 60);
        await policy.prepare(0, prompt, undefined, 58);
        // 30 tokens generated: enough after the turn boundary for the whole state to be saved too.
        store.held[0] = [...prompt, ...Array.from({ length: 30 }, () => 7)];
        await policy.prepare(0, conversation(2, 20), undefined, undefined);
        assert.deepEqual(store.saves.map((tokens) => tokens.length), [90, 58]);
        assert.equal(cache!.longestMatch([...prompt.slice(0, 58), 3, 3], 59, undefined)?.shared, 58);
    });
});

describe("SlotCachePolicy: tool loops on a sliding-window model", () => {
    // A conversation's first turn (60 tokens) whose answer calls a tool; its next user message
    // would leave it at 58 (the answer's start), where its state is saved.
    const firstTurn = conversation(1, 60);
    const loopStart = 58;
    /** The loop's second request: the first, its answer (reasoning shown) and the tool's result; the loop's next tool result leaves it at 96. */
    const secondTurn = [...firstTurn.slice(0, loopStart), ...Array.from({ length: 40 }, (_, index) => 3000 + index)];
    const generated = (prompt: number[]): number[] => [...prompt, ...Array.from({ length: 30 }, () => 7)];

    async function runLoop(withLoopStart: boolean): Promise<{ store: FakeSlotStore; cache: PromptCache }> {
        const { store, policy, cache } = await setUp(1, { slidingWindow: 8 });
        await policy.prepare(0, firstTurn, "session:a", loopStart);
        store.held[0] = generated(firstTurn);
        // Another session takes the slot between the loop's requests (one slot, two users).
        await policy.prepare(0, conversation(2, 20), "session:b", undefined);
        assert.equal((await policy.prepare(0, secondTurn, "session:a", 96, undefined, withLoopStart ? loopStart : undefined)).cached, loopStart);
        store.held[0] = generated(secondTurn);
        await policy.prepare(0, conversation(3, 20), "session:c", undefined);
        return { store, cache: cache! };
    }

    it("saves a loop's turn where its next tool result leaves the prompt, and keeps the state at the loop's start for the user's next message", async () => {
        const { store, cache } = await runLoop(true);
        assert.deepEqual(store.saves.map((tokens) => tokens.length), [90, 58, 128, 96]);
        // The loop's third request restores the second one's state...
        assert.equal(cache.longestMatch([...secondTurn.slice(0, 96), 5, 5], 97, "session:a")?.shared, 96);
        // ...and the user's next message, which renders the loop without its reasoning, the loop's start.
        assert.equal(cache.longestMatch([...firstTurn.slice(0, loopStart), 6, 6], 59, "session:a")?.shared, loopStart);
    });

    it("without the loop's start, the loop's later states superseded it (the same conversation's turn, extended)", async () => {
        const { cache } = await runLoop(false);
        assert.equal(cache.longestMatch([...firstTurn.slice(0, loopStart), 6, 6], 59, "session:a"), undefined);
    });
});

describe("SlotCachePolicy: restore or evaluate", () => {
    it("restores a saved state that spares at least 16 tokens more than the slot's own prefix", async () => {
        const { store, policy } = await setUp(1);
        store.held[0] = conversation(1, 100);
        await policy.prepare(0, conversation(2, 40), undefined, undefined);
        assert.equal(store.loads, 0);
        // The slot is empty (a new conversation took it), the saved state holds all 100: restored.
        assert.equal((await policy.prepare(0, [...conversation(1, 100), 9], undefined, undefined)).cached, 100);
        assert.equal(store.loads, 1);
        assert.deepEqual(store.held[0], conversation(1, 100));
    });

    it("evaluates the prompt when the saved state spares fewer than 16 tokens more", async () => {
        const { store, policy } = await setUp(1);
        store.held[0] = conversation(1, 100);
        await policy.prepare(0, conversation(2, 40), undefined, undefined);
        // The slot holds the first 40 tokens of conversation 1; the saved state holds 45 of the prompt, then 56.
        store.held[0] = conversation(1, 40);
        assert.equal((await policy.prepare(0, [...conversation(1, 45), 9], undefined, undefined)).cached, 40);
        assert.equal(store.loads, 0);
        assert.equal((await policy.prepare(0, [...conversation(1, 56), 9], undefined, undefined)).cached, 56);
        assert.equal(store.loads, 1);
    });

    it("a request whose state another request's save is writing waits for it and restores it", async () => {
        const { store, policy } = await setUp(2);
        store.held[0] = conversation(1, 100);
        // Two requests take their slots together: a new conversation takes slot 0 (saving its
        // state), and conversation 1's next turn takes the empty slot 1.
        const [newOne, returning] = await Promise.all([
            policy.prepare(0, conversation(2, 40), undefined, undefined),
            policy.prepare(1, [...conversation(1, 100), 9], undefined, undefined)
        ]);
        assert.equal(newOne.cached, 0);
        assert.equal(returning.cached, 100);
        assert.equal(store.loads, 1);
    });

    it("erases what follows the shared prefix and always leaves the prompt's last token to evaluate", async () => {
        const { store, policy } = await setUp(1, { cache: false });
        store.held[0] = [1, 2, 3, 4, 5];
        assert.equal((await policy.prepare(0, [1, 2, 3], undefined, undefined)).cached, 2);
        assert.deepEqual(store.held[0], [1, 2]);
    });
});

describe("SlotCachePolicy: shared-prefix states", () => {
    /** A session: a 300-token preamble every session shares, then its own `first` token and turn. */
    const session = (first: number): number[] => [...Array.from({ length: 300 }, (_, index) => 5000 + index), first, ...conversation(first, 60)];

    it("evaluates the prompt up to its preamble, saves that state once, and a later session restores it", async () => {
        const { store, policy, cache } = await setUp(2, { slidingWindow: 128 });
        const first = await policy.prepare(0, session(1), undefined, undefined, 300);
        assert.deepEqual(first, { cached: 0, held: 300, checkpointAfterPrompt: false });
        assert.deepEqual(store.saves.map((saved) => saved.length), [300]);
        assert.equal(cache!.longestMatch(session(2), 300, undefined)?.shared, 300);
        // The same preamble again, in the other slot: restored, and not saved a second time.
        const second = await policy.prepare(1, session(2), undefined, undefined, 300);
        assert.deepEqual(second, { cached: 300, held: 300, checkpointAfterPrompt: false });
        assert.equal(store.loads, 1);
        assert.equal(store.saves.length, 1);
    });

    it("two sessions arriving together save their one preamble once, and the second restores it instead of evaluating it", async () => {
        const { store, policy } = await setUp(2, { slidingWindow: 128 });
        const [first, second] = await Promise.all([policy.prepare(0, session(1), undefined, undefined, 300), policy.prepare(1, session(2), undefined, undefined, 300)]);
        assert.equal(store.saves.filter((saved) => saved.length === 300).length, 1);
        assert.deepEqual(first, { cached: 0, held: 300, checkpointAfterPrompt: false });
        assert.deepEqual(second, { cached: 300, held: 300, checkpointAfterPrompt: false });
        assert.equal(store.loads, 1);
    });

    it("a next turn whose slot holds the preamble does not wait for another session saving it", async () => {
        const { store, policy } = await setUp(2, { slidingWindow: 128 });
        store.held[1] = session(2).slice(0, 320);
        let resumed = "";
        const saving = policy.prepare(0, session(1), undefined, undefined, 300).then(() => (resumed ||= "saving session"));
        const nextTurn = policy.prepare(1, session(2), undefined, undefined, 300).then(() => (resumed ||= "next turn"));
        await Promise.all([saving, nextTurn]);
        assert.equal(resumed, "next turn");
        assert.equal(store.loads, 0);
    });

    it("on a sliding-window model, saves also where a session's preamble parts from another's saved one, and a third session parting there restores it", async () => {
        // Three users: a 300-token system prompt and tools that differ from token 200 on (a per-user path inside the system prompt).
        const userSession = (user: number): number[] => [
            ...Array.from({ length: 200 }, (_, index) => 5000 + index), ...Array.from({ length: 100 }, (_, index) => 100_000 * user + index), ...conversation(user, 60)
        ];
        const { store, policy } = await setUp(3, { slidingWindow: 128 });
        assert.deepEqual(await policy.prepare(0, userSession(1), "user:1", undefined, 300), { cached: 0, held: 300, checkpointAfterPrompt: false });
        // The second user's entries-to-be: 200 tokens any later user shares, then its own 300.
        assert.deepEqual(await policy.prepare(1, userSession(2), "user:2", undefined, 300), { cached: 0, held: 300, checkpointAfterPrompt: false });
        assert.deepEqual(store.saves.map((saved) => saved.length), [300, 200, 300]);
        assert.deepEqual(await policy.prepare(2, userSession(3), "user:3", undefined, 300), { cached: 200, held: 300, checkpointAfterPrompt: false });
        assert.equal(store.loads, 1);
        assert.deepEqual(store.saves.map((saved) => saved.length), [300, 200, 300, 300]);
    });

    it("does not save where preambles part on a full-attention model, whose entries serve any prefix of theirs", async () => {
        const { store, policy } = await setUp(2);
        const preambleOf = (user: number): number[] => [...Array.from({ length: 200 }, (_, index) => 5000 + index), ...Array.from({ length: 100 }, (_, index) => 100_000 * user + index)];
        await policy.prepare(0, [...preambleOf(1), ...conversation(1, 60)], undefined, undefined, 300);
        assert.equal((await policy.prepare(1, [...preambleOf(2), ...conversation(2, 60)], undefined, undefined, 300)).cached, 200);
        assert.deepEqual(store.saves.map((saved) => saved.length), [300, 300]);
    });

    it("saves nothing without a cache, for a preamble the slot holds already, or one that leaves no token to evaluate", async () => {
        const none = await setUp(1, { cache: false });
        assert.deepEqual(await none.policy.prepare(0, session(1), undefined, undefined, 300), { cached: 0, held: 0, checkpointAfterPrompt: false });
        const { store, policy } = await setUp(1, { slidingWindow: 128 });
        store.held[0] = session(1).slice(0, 320);
        assert.deepEqual(await policy.prepare(0, session(1), undefined, undefined, 300), { cached: 320, held: 320, checkpointAfterPrompt: false });
        assert.equal(store.saves.length, 0);
        const short = session(3).slice(0, 301);
        store.held[0] = [];
        assert.deepEqual(await policy.prepare(0, short, undefined, undefined, 301), { cached: 0, held: 0, checkpointAfterPrompt: false });
        assert.equal(store.saves.length, 0);
    });
});

describe("SlotCachePolicy: turn boundaries on the windowed cache", () => {
    /** A store whose slots keep checkpoints (the windowed sliding-window cache): records what was evaluated and where checkpoints were kept. */
    class CheckpointingStore extends FakeSlotStore {
        readonly evaluated: number[] = [];
        readonly checkpoints: number[] = [];
        readonly keptTo: number[] = [];

        override async evaluate(slot: number, tokens: readonly number[]): Promise<void> {
            this.evaluated.push(tokens.length);
            await super.evaluate(slot, tokens);
        }

        async checkpoint(slot: number): Promise<void> {
            await Promise.resolve();
            this.checkpoints.push(this.tokenCount(slot));
        }

        async keepCheckpointsTo(_slot: number, length: number): Promise<void> {
            await Promise.resolve();
            this.keptTo.push(length);
        }
    }

    const policyOver = (store: FakeSlotStore): SlotCachePolicy => new SlotCachePolicy({ store, cache: undefined, slidingWindow: 128, costs: new StateCosts() });

    it("leaves a boundary near the prompt's end to a checkpoint once the prompt is evaluated: one evaluation, not two", async () => {
        const store = new CheckpointingStore(1);
        const prompt = conversation(1, 200);
        // A chat prompt's next turn leaves it at the assistant header, a few tokens before its end.
        assert.deepEqual(await policyOver(store).prepare(0, prompt, undefined, 196), { cached: 0, held: 0, checkpointAfterPrompt: true });
        assert.deepEqual(store.evaluated, []);
        assert.deepEqual(store.checkpoints, []);
    });

    it("evaluates to a boundary far before the end and keeps a checkpoint there", async () => {
        const store = new CheckpointingStore(1);
        const prompt = conversation(1, 200);
        assert.deepEqual(await policyOver(store).prepare(0, prompt, undefined, 100), { cached: 0, held: 100, checkpointAfterPrompt: false });
        assert.deepEqual(store.evaluated, [100]);
        assert.deepEqual(store.checkpoints, [100]);
    });

    it("inside a tool loop, drops the checkpoints past the loop's start before the turn keeps its own, so the loop's start outlasts a long loop", async () => {
        const store = new CheckpointingStore(1);
        const prompt = conversation(1, 200);
        store.held[0] = prompt.slice(0, 180);
        assert.deepEqual(await policyOver(store).prepare(0, prompt, undefined, 196, undefined, 100), { cached: 180, held: 180, checkpointAfterPrompt: true });
        assert.deepEqual(store.keptTo, [100]);
        // Not when the slot does not hold the loop's start (another conversation's tokens, or none).
        store.held[0] = [];
        await policyOver(store).prepare(0, prompt, undefined, 196, undefined, 100);
        assert.deepEqual(store.keptTo, [100]);
    });

    it("keeps no checkpoint for a boundary the slot holds already", async () => {
        const store = new CheckpointingStore(1);
        const prompt = conversation(1, 200);
        store.held[0] = prompt.slice(0, 198);
        assert.deepEqual(await policyOver(store).prepare(0, prompt, undefined, 196), { cached: 198, held: 198, checkpointAfterPrompt: false });
    });
});

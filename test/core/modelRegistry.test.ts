import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { ReadyModel } from "../../src/core/modelHost.js";
import { ModelRegistry, type ModelEntry, type ModelLoader, type ModelRegistryOptions, type StoredModelFile } from "../../src/core/modelRegistry.js";
import { ModelLoadFailedError } from "../../src/errors.js";

/*
 * The registry's own policy (room, unloads, names, retries) over a fake loader whose loads and
 * disposes end when the test says: the races are played out step by step. The fake does no I/O,
 * so one turn of the event loop runs every promise the registry chained; "nothing happened yet"
 * is checked after a few such turns. The real engine under the same registry: test/http/multipleModels.test.ts.
 */

interface Deferred {
    promise: Promise<void>;
    resolve(): void;
    reject(error: Error): void;
}

function deferred(): Deferred {
    let resolve!: () => void;
    let reject!: (error: Error) => void;
    const promise = new Promise<void>((ok, fail) => {
        resolve = ok;
        reject = fail;
    });
    return { promise, resolve, reject };
}

/** Lets every chained promise of the fake run (it does no I/O: a few turns of the event loop are plenty). */
async function settle(): Promise<void> {
    for (let turn = 0; turn < 5; turn += 1) await nextTurn();
}

/** Waits, turn by turn, until `holds`; fails naming `what` past the deadline. */
async function until(what: string, holds: () => boolean, deadlineMs = 5_000): Promise<void> {
    const deadline = Date.now() + deadlineMs;
    while (!holds()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await nextTurn();
    }
}

/** One call of the fake loader: the test ends it with `finish` or `fail`. */
interface LoadCall {
    id: string;
    /** makeRoom returned: the registry gave this load its room. */
    roomGiven: boolean;
    /** The engine it made, once it finished. */
    engine: string | undefined;
    finish(): void;
    fail(error: Error): void;
}

/** One dispose of an engine the fake made: it ends when the test calls `finish` (or `fail`). */
interface DisposeCall {
    engine: string;
    finish(): void;
    fail(error: Error): void;
}

/**
 * A loader over no engine: each model takes the bytes `sizes` says, each load and each dispose
 * waits for the test. It counts the engines that exist (from the room being given until their
 * dispose ended) to check the bounds were never exceeded, and of each model apart.
 */
class FakeLoader implements ModelLoader {
    readonly loads: LoadCall[] = [];
    readonly disposes: DisposeCall[] = [];
    /** Engines that hold memory now, by model id. */
    readonly live = new Map<string, number>();
    maxLive = 0;
    maxLiveOfOneModel = 0;
    private made = 0;

    constructor(private readonly sizes: Record<string, number>, private readonly stored: Record<string, StoredModelFile> = {}) {}

    async load(entry: ModelEntry, makeRoom: (bytes: number) => Promise<void>): Promise<{ memoryBytes: number; unload: () => Promise<void> }> {
        const gate = deferred();
        const call: LoadCall = { id: entry.id, roomGiven: false, engine: undefined, finish: gate.resolve, fail: gate.reject };
        this.loads.push(call);
        entry.file ??= entry.spec === undefined ? undefined : this.stored[entry.spec]?.file;
        entry.purpose = "chat";
        const bytes = this.sizes[entry.id] ?? 1;
        await makeRoom(bytes);
        call.roomGiven = true;
        this.count(entry.id, 1);
        try {
            await gate.promise;
        } catch (error) {
            this.count(entry.id, -1);
            throw error;
        }
        this.made += 1;
        const engine = `${entry.id}#${this.made}`;
        call.engine = engine;
        entry.chat.setReady({ source: engine } as unknown as ReadyModel);
        return {
            memoryBytes: bytes,
            unload: async () => {
                const done = deferred();
                this.disposes.push({ engine, finish: done.resolve, fail: done.reject });
                await done.promise;
                this.count(entry.id, -1);
            }
        };
    }

    /** The calls that loaded `id`, in order. */
    loadsOf(id: string): LoadCall[] {
        return this.loads.filter((load) => load.id === id);
    }

    async storedModels(): Promise<(name: string) => StoredModelFile | undefined> {
        return (name) => this.stored[name];
    }

    private count(id: string, change: number): void {
        this.live.set(id, (this.live.get(id) ?? 0) + change);
        const values = [...this.live.values()];
        this.maxLive = Math.max(this.maxLive, values.reduce((sum, value) => sum + value, 0));
        this.maxLiveOfOneModel = Math.max(this.maxLiveOfOneModel, ...values);
    }
}

function registryOf(models: string[], loader: FakeLoader, options: Partial<ModelRegistryOptions> = {}): ModelRegistry {
    return new ModelRegistry(models.map((id) => ({ id, spec: `spec:${id}` })), false, {
        loader, maxLoaded: 3, maxMemoryBytes: undefined, keepAliveMs: undefined, loadWaitMs: 60_000, strict: false, loadOnDemand: false, ...options
    });
}

const signal = new AbortController().signal;
const engineOf = (model: ReadyModel): string => model.source;

/** Starts `registry`, lets the default's load finish, and waits for the other start-up loads to end (each must find no room, or it would wait for the test). */
async function started(registry: ModelRegistry, loader: FakeLoader): Promise<void> {
    const start = registry.start();
    await until("the default's load", () => loader.loads.length === 1 && loader.loads[0]!.roomGiven);
    loader.loads[0]!.finish();
    await start;
    await registry.whenStarted();
}

describe("the model registry: unloads", () => {
    it("counts a model being unloaded toward the memory bound until its engine is disposed", async () => {
        const loader = new FakeLoader({ a: 60, b: 60 });
        const registry = registryOf(["a", "b"], loader, { maxMemoryBytes: 100 });
        await started(registry, loader);
        const [a] = registry.all;
        const unloading = registry.unloadIdle(a!);
        // b tried at start too: it did not fit beside a.
        const tries = loader.loadsOf("b").length;
        const useB = registry.use("b", "chat", signal);
        await until("b's load to start", () => loader.loadsOf("b").length === tries + 1);
        await settle();
        const loadB = loader.loadsOf("b")[tries]!;
        assert.equal(loader.disposes.length, 1, "a's engine is being disposed");
        assert.equal(loadB.roomGiven, false, "b waits: a's engine still holds its 60 bytes");
        assert.equal(a!.memoryBytes, 60);
        loader.disposes[0]!.finish();
        assert.equal(await unloading, true);
        await until("b to be given room once a is disposed", () => loadB.roomGiven);
        loadB.finish();
        const b = await useB;
        assert.equal(engineOf(b.model), "b#2");
        b.release();
        assert.equal(loader.maxLive, 1, "never both engines in memory");
    });

    it("reports an idle model's failed unload (MAPLE_KEEP_ALIVE) instead of leaving its rejection unhandled, and loads it again on the next request", async () => {
        const loader = new FakeLoader({ a: 60 });
        const failures: string[] = [];
        const unhandled: unknown[] = [];
        const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
        process.on("unhandledRejection", onUnhandled);
        try {
            const registry = registryOf(["a"], loader, { keepAliveMs: 1, onUnloadError: (entry, error) => failures.push(`${entry.id}: ${(error as Error).message}`) });
            await started(registry, loader);
            const first = await registry.use("a", "chat", signal);
            first.release();
            await until("the idle model's unload", () => loader.disposes.length === 1, 5_000);
            loader.disposes[0]!.fail(new Error("dispose failed"));
            await until("the failure to be reported", () => failures.length === 1);
            await settle();
            assert.deepEqual(failures, ["a: dispose failed"]);
            assert.deepEqual(unhandled, []);
            const use = registry.use("a", "chat", signal);
            await until("a's second load", () => loader.loads.length === 2 && loader.loads[1]!.roomGiven);
            loader.loads[1]!.finish();
            (await use).release();
        } finally {
            process.off("unhandledRejection", onUnhandled);
        }
    });

    it("makes a request for a model being unloaded wait for the unload, then load it again: never two engines of one model", async () => {
        const loader = new FakeLoader({ a: 60 });
        const registry = registryOf(["a"], loader);
        await started(registry, loader);
        const [a] = registry.all;
        const unloading = registry.unloadIdle(a!);
        const use = registry.use("a", "chat", signal);
        await settle();
        assert.equal(loader.loads.length, 1, "no second load of a while its engine is disposed");
        assert.equal(a!.host.state.status, "loading", "the request's load is under way, after the unload");
        loader.disposes[0]!.finish();
        await unloading;
        await until("a's second load", () => loader.loads.length === 2 && loader.loads[1]!.roomGiven);
        loader.loads[1]!.finish();
        const used = await use;
        assert.equal(engineOf(used.model), "a#2");
        used.release();
        assert.equal(loader.maxLiveOfOneModel, 1);
    });

    it("serves a load that unloads an idle model and a request for that model meanwhile, one after the other, within a bound of one", async () => {
        const loader = new FakeLoader({ a: 60, b: 60 });
        const registry = registryOf(["a", "b"], loader, { maxLoaded: 1 });
        await started(registry, loader);
        const useB = registry.use("b", "chat", signal);
        await until("a's unload, to make room for b", () => loader.disposes.length === 1);
        const useA = registry.use("a", "chat", signal);
        await settle();
        assert.equal(loader.loads.length, 2, "a's new load waits for a's unload");
        loader.disposes[0]!.finish();
        await until("b to be given room", () => loader.loads[1]!.roomGiven);
        loader.loads[1]!.finish();
        const b = await useB;
        assert.equal(engineOf(b.model), "b#2");
        await until("a's new load to ask for room", () => loader.loads.length === 3);
        await settle();
        assert.equal(loader.loads[2]!.roomGiven, false, "a waits while b serves its request");
        b.release();
        await until("b's unload, to make room for a", () => loader.disposes.length === 2);
        loader.disposes[1]!.finish();
        await until("a to be given room", () => loader.loads[2]!.roomGiven);
        loader.loads[2]!.finish();
        const a = await useA;
        assert.equal(engineOf(a.model), "a#3");
        a.release();
        assert.equal(loader.maxLive, 1, "one engine at a time, as MAPLE_MAX_LOADED_MODELS=1 says");
    });
});

describe("the model registry: models of the models directory", () => {
    const qwen: StoredModelFile = { spec: "synthetic:qwen3-tiny", file: "/models/synthetic/qwen3-tiny-v1.gguf" };
    const other: StoredModelFile = { spec: "synthetic:other", file: "/models/synthetic/other-v1.gguf" };
    const stored = { "qwen3-tiny": qwen, "synthetic:qwen3-tiny": qwen, other, "synthetic:other": other };

    it("routes every name of one stored file to one entry, and loads it once", async () => {
        const loader = new FakeLoader({}, stored);
        const registry = registryOf(["maple"], loader, { loadOnDemand: true });
        await started(registry, loader);
        const [byName, bySpec] = await Promise.all([registry.route("qwen3-tiny"), registry.route("synthetic:qwen3-tiny")]);
        assert.equal(byName, bySpec);
        assert.deepEqual(registry.all.map((entry) => entry.id), ["maple", "qwen3-tiny"]);
        assert.equal(byName.file, qwen.file);
        const uses = [registry.use("synthetic:qwen3-tiny", "chat", signal), registry.use("qwen3-tiny", "chat", signal)];
        await until("the load", () => loader.loads.length === 2 && loader.loads[1]!.roomGiven);
        await settle();
        assert.equal(loader.loads.length, 2, "one load for both names");
        loader.loads[1]!.finish();
        const [first, second] = await Promise.all(uses);
        assert.equal(engineOf(first!.model), engineOf(second!.model));
        assert.deepEqual([first!.modelId, second!.modelId], ["synthetic:qwen3-tiny", "qwen3-tiny"], "each request's own name is echoed");
        first!.release();
        second!.release();
        assert.equal(registry.find("synthetic:qwen3-tiny"), byName, "the other name is remembered");
    });

    it("routes a stored file that a listed model serves to that model, loaded or not", async () => {
        const loader = new FakeLoader({}, stored);
        const registry = new ModelRegistry([{ id: "maple", spec: "spec:maple" }, { id: "listed", spec: "synthetic:qwen3-tiny" }, { id: "third", spec: "synthetic:other" }],
            false, { loader, maxLoaded: 2, maxMemoryBytes: undefined, keepAliveMs: undefined, loadWaitMs: 60_000, strict: false, loadOnDemand: true });
        const start = registry.start();
        await until("the default's load", () => loader.loads.length === 1 && loader.loads[0]!.roomGiven);
        loader.loads[0]!.finish();
        await start;
        await until("listed's load at start", () => loader.loads.length === 2 && loader.loads[1]!.roomGiven);
        loader.loads[1]!.finish();
        await registry.whenStarted();
        const [, listed, third] = registry.all;
        assert.equal(listed!.file, qwen.file, "the loader set the file it resolved");
        assert.equal(third!.file, undefined, "beyond MAPLE_MAX_LOADED_MODELS: not resolved at start");
        assert.equal(await registry.route("qwen3-tiny"), listed);
        assert.equal(await registry.route("synthetic:qwen3-tiny"), listed);
        assert.equal(await registry.route("other"), third, "found by its spec before it was ever resolved");
        assert.equal(registry.all.length, 3, "no entry beside the listed ones");
        assert.equal((await registry.route("no-such-model")).id, "maple", "a name the directory does not hold: the default");
    });
});

describe("the model registry: failed loads", () => {
    it("tries a failed load again on a request after its back-off, which doubles up to its cap; within it, the failure at once with Retry-After", async () => {
        let now = 1_000_000;
        const loader = new FakeLoader({});
        const registry = registryOf(["maple", "broken"], loader, { loadRetry: { firstMs: 5_000, maxMs: 20_000 }, now: () => now });
        const loadsOfBroken = (): LoadCall[] => loader.loadsOf("broken");
        const start = registry.start();
        await until("the default's load", () => loader.loads.length === 1 && loader.loads[0]!.roomGiven);
        loader.loads[0]!.finish();
        await start;
        await until("broken's load at start", () => loadsOfBroken().length === 1 && loadsOfBroken()[0]!.roomGiven);
        loadsOfBroken()[0]!.fail(new Error("no such file"));
        await registry.whenStarted();
        const failingLoad = async (): Promise<ModelLoadFailedError> => {
            const count = loadsOfBroken().length;
            const use = registry.use("broken", "chat", signal);
            await until("a load of broken", () => loadsOfBroken().length === count + 1 && loadsOfBroken()[count]!.roomGiven);
            loadsOfBroken()[count]!.fail(new Error("no such file"));
            return await use.then(() => assert.fail("the load failed"), (error: unknown) => error as ModelLoadFailedError);
        };
        const refusedAtOnce = async (): Promise<ModelLoadFailedError> => {
            const count = loader.loads.length;
            const error = await registry.use("broken", "chat", signal).then(() => assert.fail("still failed"), (caught: unknown) => caught as ModelLoadFailedError);
            assert.equal(loader.loads.length, count, "no new load within the back-off");
            return error;
        };

        const first = await refusedAtOnce();
        assert.ok(first instanceof ModelLoadFailedError);
        assert.equal(first.code, "model_load_failed");
        assert.equal(first.kind, "server");
        assert.equal(first.retryAfterSeconds, 5);
        assert.match(first.message, /'broken' failed to load/);
        assert.equal(registry.all[1]!.host.state.status, "failed");

        now += 4_000;
        assert.equal((await refusedAtOnce()).retryAfterSeconds, 1);
        now += 1_000;
        assert.equal((await failingLoad()).retryAfterSeconds, 10, "the back-off doubles");
        now += 10_000;
        assert.equal((await failingLoad()).retryAfterSeconds, 20);
        now += 20_000;
        assert.equal((await failingLoad()).retryAfterSeconds, 20, "up to its cap");
        now += 19_999;
        assert.equal((await refusedAtOnce()).retryAfterSeconds, 1);

        now += 1;
        const use = registry.use("broken", "chat", signal);
        await until("the next try", () => loadsOfBroken().length === 5 && loadsOfBroken()[4]!.roomGiven);
        loadsOfBroken()[4]!.finish();
        const loaded = await use;
        assert.equal(engineOf(loaded.model), loadsOfBroken()[4]!.engine);
        assert.equal(registry.all[1]!.failures, 0, "a load that succeeds clears the back-off");
        loaded.release();
    });
});

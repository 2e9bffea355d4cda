import { EventEmitter, once } from "node:events";
import type { EmbeddingEngine } from "../engine/embeddingEngine.js";
import type { ModelPurpose } from "../engine/modelFileFacts.js";
import { InvalidRequestError, ModelLoadFailedError, ModelLoadingError, NotFoundError, ServerError } from "../errors.js";
import { servedModelName } from "../ollama/modelName.js";
import { ModelHost, type ReadyModel } from "./modelHost.js";

/** A listed model that does not fit beside the ones loaded at start: left unloaded until a request names it. */
export class NoRoomAtStartError extends Error {
    constructor(id: string) {
        super(`'${id}' is not loaded at start: it does not fit beside the models loaded (MAPLE_MAX_MODEL_MEMORY); a request naming it loads it`);
        this.name = "NoRoomAtStartError";
    }
}

/** A loaded embedding model as /v1/embeddings and /api/embed serve it. */
export interface ReadyEmbeddingModel {
    embedder: EmbeddingEngine;
    source: string;
}

/**
 * One served model: its name, its spec, and its state in two hosts, one per purpose (the loader
 * sets the one its GGUF is for; routes look at `purpose` first, so the other is never consulted).
 */
export class ModelEntry {
    readonly chat = new ModelHost<ReadyModel>();
    readonly embedding = new ModelHost<ReadyEmbeddingModel>();
    /** Known once the spec is resolved and its GGUF header read. */
    purpose: ModelPurpose | undefined;
    /** Weights + KV of the loaded model (readModelFileFacts), 0 while not loaded; still counted while it unloads. */
    memoryBytes = 0;
    /** A load in progress that was given room: the memory it asked for, held until it is loaded (then memoryBytes) or fails. */
    reservedBytes: number | undefined;
    /**
     * The model file it loads (an absolute path), once known: the loader sets it when it resolves
     * the spec, a model found in the models directory has it from the start. Two names of one file
     * are one entry (MAPLE_LOAD_ON_DEMAND), so a file is never loaded twice.
     */
    file: string | undefined;
    /** Requests that hold this model (between routing and their response's end). */
    inFlight = 0;
    lastUsed = 0;
    /** The load in progress or done; undefined while unloaded. */
    loading: Promise<void> | undefined;
    /** Frees the loaded engine; undefined while not loaded. */
    unload: (() => Promise<void>) | undefined;
    /**
     * The unload in progress (it never rejects): until it ends the engine still holds its memory,
     * so the entry counts toward the bounds, and a new load of it waits for it.
     */
    unloading: Promise<void> | undefined;
    /** Loads failed in a row (0 once one succeeds): the back-off before the next try doubles with each. */
    failures = 0;
    /** After a failed load, when (epoch ms) a request may try again; until then requests get the failure at once. */
    retryAt = 0;
    /** The start-up load of the default model: requests get 503 model_loading at once, as /health says 503 then. */
    atStartup = false;
    /** A listed model other than the default loading at start: it loads only if it fits beside the others, unloading none. */
    startupExtra = false;
    keepAliveTimer: NodeJS.Timeout | undefined;
    /** The keep-alive the last request asked for (Ollama's `keep_alive`): ms, null for good; undefined: the server's. */
    keepAliveMs: number | null | undefined;

    constructor(readonly id: string, readonly spec: string | undefined, readonly pinned: boolean) {}

    get loaded(): boolean {
        return this.unload !== undefined;
    }

    /** The host of its purpose (the chat host while unknown): what /health and /v1/models report. */
    get host(): ModelHost<ReadyModel> | ModelHost<ReadyEmbeddingModel> {
        return this.purpose === "embedding" ? this.embedding : this.chat;
    }
}

export interface ModelLoader {
    /**
     * Resolves `entry.spec` (setting `entry.file` to the file it resolves to), sets
     * `entry.purpose`, calls `makeRoom` with the memory it will take, loads it and sets the host of
     * its purpose ready; returns how to free it. Throws when it cannot load (the registry sets the
     * host failed, and a request after the back-off tries again).
     */
    load(entry: ModelEntry, makeRoom: (bytes: number) => Promise<void>, signal: AbortSignal): Promise<{ memoryBytes: number; unload: () => Promise<void> }>;
    /**
     * The models directory as it is now (MAPLE_LOAD_ON_DEMAND): looks up the stored model a name
     * or spec names, with the spec that loads it and its file (an absolute path, its identity);
     * undefined when none does.
     */
    storedModels?(): Promise<(name: string) => StoredModelFile | undefined>;
}

/** A model of the models directory: the spec that loads it and its file, which identifies it whatever name a request gives. */
export interface StoredModelFile {
    spec: string;
    file: string;
}

/** How long a failed load is left alone before a request tries again: the first wait, doubling with each failure up to the last. */
export interface LoadRetryBackoff {
    firstMs: number;
    maxMs: number;
}

/** 5 s (the Retry-After of model_loading), then 10, 20, … up to 5 minutes. */
const defaultLoadRetry: LoadRetryBackoff = { firstMs: 5_000, maxMs: 300_000 };

export interface ModelRegistryOptions {
    loader: ModelLoader;
    /** Loaded models at most (MAPLE_MAX_LOADED_MODELS). */
    maxLoaded: number;
    /** Their memory at most, bytes (MAPLE_MAX_MODEL_MEMORY); undefined: no bound. */
    maxMemoryBytes: number | undefined;
    /** An idle model unloads after this (MAPLE_KEEP_ALIVE); undefined: never. */
    keepAliveMs: number | undefined;
    /** How long a request waits for a load (or for room to load) before 503 model_loading (MAPLE_QUEUE_TIMEOUT). */
    loadWaitMs: number;
    /** MAPLE_STRICT_MODEL: a name that matches no served model is a 404 instead of the default. */
    strict: boolean;
    /** MAPLE_LOAD_ON_DEMAND: models of the models directory load when a request names them. */
    loadOnDemand: boolean;
    /** The back-off after a failed load; default 5 s doubling up to 5 minutes. Requests in it get the failure at once, with Retry-After. */
    loadRetry?: LoadRetryBackoff;
    /** The clock (epoch ms) of the back-off and of least-recently-used; default Date.now (tests pass their own). */
    now?: () => number;
    /** Told when an idle model's unload (MAPLE_KEEP_ALIVE) fails: nobody else awaits it. The entry is unloaded all the same. */
    onUnloadError?: (entry: ModelEntry, error: unknown) => void;
}

/** A request's hold on a model: it is not unloaded until `release` (the response's end). */
export interface ModelUse<Ready> {
    entry: ModelEntry;
    model: Ready;
    /** The name to echo: the one the request gave, else the model's. */
    modelId: string;
    release(): void;
}

/**
 * The served models by name, the first the default: routes each request's `model` to one, loads
 * models when asked (the listed ones at start, others on demand), and unloads idle ones (least
 * recently used first, never one in use or pinned) when a load needs room or after the keep-alive.
 */
export class ModelRegistry {
    private readonly entries: ModelEntry[];
    /** Other names requests gave a model of the models directory by (MAPLE_LOAD_ON_DEMAND): each maps to the entry of its file. */
    private readonly aliases = new Map<string, ModelEntry>();
    /** "change" whenever room may have been freed: a request released its model, a load ended, an unload ended. */
    private readonly roomChanges = new EventEmitter();
    private readonly closing = new AbortController();
    private startedLoads: Promise<void> = Promise.resolve();
    private readonly now: () => number;

    constructor(models: readonly { id: string; spec: string | undefined }[], pinDefault: boolean, private readonly options: ModelRegistryOptions) {
        this.entries = models.map((model, index) => new ModelEntry(model.id, model.spec, index === 0 && pinDefault));
        // The default is "loading" from the start (/health answers 503 until it is ready); the others wait their turn.
        for (const entry of this.entries.slice(1)) entry.host.setUnloaded();
        this.roomChanges.setMaxListeners(0);
        this.now = options.now ?? Date.now;
    }

    /** A registry of one chat model loaded already (benchmarks that build the app over their own engine). */
    static ofLoaded(id: string, model: ReadyModel): ModelRegistry {
        const registry = new ModelRegistry([{ id, spec: undefined }], true, {
            loader: { load: () => Promise.reject(new ServerError("This registry loads no models.")) },
            maxLoaded: 1, maxMemoryBytes: undefined, keepAliveMs: undefined, loadWaitMs: 0, strict: false, loadOnDemand: false
        });
        const entry = registry.default;
        entry.purpose = "chat";
        entry.chat.setReady(model);
        entry.loading = Promise.resolve();
        entry.unload = () => model.engine.dispose();
        return registry;
    }

    get default(): ModelEntry {
        return this.entries[0] as ModelEntry;
    }

    get all(): readonly ModelEntry[] {
        return this.entries;
    }

    /** Loads the listed models in order (as many as the bounds allow); settles with the default's load. */
    start(): Promise<void> {
        const [first, ...rest] = this.entries;
        if (first === undefined) return Promise.resolve();
        first.atStartup = true;
        const loadingDefault = this.ensureLoading(first).finally(() => {
            first.atStartup = false;
        });
        let chain = loadingDefault.catch(() => undefined);
        for (const entry of rest.slice(0, Math.max(0, this.options.maxLoaded - 1))) {
            chain = chain.then(() => {
                entry.startupExtra = true;
                return this.ensureLoading(entry);
            }).catch(() => {
                // Failed (see ensureLoading), or no room at start: then it stays unloaded, and loads when a request names it.
            }).finally(() => {
                entry.startupExtra = false;
            });
        }
        this.startedLoads = chain;
        return loadingDefault;
    }

    /** Settles when every start-up load has ended (loaded or failed). */
    whenStarted(): Promise<void> {
        return this.startedLoads;
    }

    /** The served model `name` names (Ollama's `:latest` tag ignored), or one of the models directory a request named so before; else undefined. */
    find(name: string): ModelEntry | undefined {
        return this.entries.find((entry) => servedModelName(name, entry.id) === entry.id) ?? this.aliases.get(name);
    }

    /**
     * The model a request is for: the one it names, one of the models directory it names (with
     * MAPLE_LOAD_ON_DEMAND), else the default, or 404 model_not_found under MAPLE_STRICT_MODEL.
     */
    async route(requested: string | undefined): Promise<ModelEntry> {
        if (requested === undefined) return this.default;
        const found = this.find(requested) ?? await this.findStored(requested);
        if (found !== undefined) return found;
        if (this.options.strict) {
            throw new NotFoundError(`The model '${requested}' does not exist; this server serves ${this.entries.map((entry) => `'${entry.id}'`).join(", ")}.`,
                "model", "model_not_found");
        }
        return this.default;
    }

    /**
     * The entry of the stored model `requested` names (MAPLE_LOAD_ON_DEMAND): the one that serves
     * its file already (a listed model, or one an earlier request named otherwise), else a new
     * one. Keyed by the file, so every name of one file is one entry and the file loads once.
     */
    private async findStored(requested: string): Promise<ModelEntry | undefined> {
        if (!this.options.loadOnDemand || this.options.loader.storedModels === undefined) return undefined;
        const lookup = await this.options.loader.storedModels();
        // Another request may have added it meanwhile.
        const known = this.find(requested);
        if (known !== undefined) return known;
        const stored = lookup(requested);
        if (stored === undefined) return undefined;
        // A listed model not resolved yet has no file: the one its spec names in the models directory.
        let entry = this.entries.find((listed) => (listed.file ?? (listed.spec === undefined ? undefined : lookup(listed.spec)?.file)) === stored.file);
        if (entry === undefined) {
            entry = new ModelEntry(requested, stored.spec, false);
            entry.file = stored.file;
            entry.host.setUnloaded();
            this.entries.push(entry);
        } else {
            this.aliases.set(requested, entry);
        }
        return entry;
    }

    /**
     * Routes `requested` to a model for `purpose`, loads it if it is not loaded (waiting up to the
     * queue timeout, else 503 model_loading), and holds it until `release`. A model of the other
     * purpose is a 400 that says what to serve instead. `onRouted` learns the model before any
     * wait, so an error (503 model_loading) can be told apart by model.
     */
    async use(requested: string | undefined, purpose: "chat", signal: AbortSignal, keepAliveMs?: number | null, onRouted?: (entry: ModelEntry) => void): Promise<ModelUse<ReadyModel>>;
    async use(requested: string | undefined, purpose: "embedding", signal: AbortSignal, keepAliveMs?: number | null,
        onRouted?: (entry: ModelEntry) => void): Promise<ModelUse<ReadyEmbeddingModel>>;
    async use(requested: string | undefined, purpose: ModelPurpose, signal: AbortSignal, keepAliveMs?: number | null,
        onRouted?: (entry: ModelEntry) => void): Promise<ModelUse<ReadyModel | ReadyEmbeddingModel>> {
        const entry = await this.route(requested);
        onRouted?.(entry);
        // As Ollama: the request's keep_alive holds for the model from now on.
        if (keepAliveMs !== undefined) entry.keepAliveMs = keepAliveMs;
        entry.inFlight += 1;
        this.stopKeepAlive(entry);
        let released = false;
        const release = (): void => {
            if (released) return;
            released = true;
            entry.inFlight -= 1;
            entry.lastUsed = this.now();
            this.roomChanges.emit("change");
            this.startKeepAlive(entry);
        };
        try {
            const model = await this.ready(entry, purpose, signal);
            return { entry, model, modelId: requested ?? entry.id, release };
        } catch (error) {
            release();
            throw error;
        }
    }

    /** The model `name` names, loaded for chat, without waiting (tools that describe it: /v1/models, /api/show). */
    readyChat(entry: ModelEntry): ReadyModel {
        return this.checkPurpose(entry, "chat").chat.requireReady();
    }

    /** Unloads `entry` now if it is loaded and no request holds it (bench/models times it); false when it is not. */
    async unloadIdle(entry: ModelEntry): Promise<boolean> {
        if (!entry.loaded || entry.inFlight > 0) return false;
        await this.unloadEntry(entry);
        return true;
    }

    /** Cancels loads in progress (the server is closing): their requests get their error. */
    stopLoading(): void {
        this.closing.abort();
    }

    /** Unloads every model and stops loads in progress. */
    async close(): Promise<void> {
        this.closing.abort();
        await Promise.all(this.entries.map(async (entry) => {
            this.stopKeepAlive(entry);
            await entry.unloading;
            await entry.loading?.catch(() => undefined);
            await entry.unload?.();
            entry.unload = undefined;
        }));
    }

    private async ready(entry: ModelEntry, purpose: ModelPurpose, signal: AbortSignal): Promise<ReadyModel | ReadyEmbeddingModel> {
        this.checkPurpose(entry, purpose);
        // The start-up load answers 503 at once, as /health does then.
        if (entry.atStartup) return entry[purpose].requireReady();
        // A failed load is tried again, but not before its back-off is over: until then the failure, at once.
        if (entry.host.state.status === "failed" && this.now() < entry.retryAt) throw this.loadFailed(entry);
        const loading = this.ensureLoading(entry);
        if (entry.host.state.status !== "ready") await this.waitForLoad(loading.catch(() => undefined), signal);
        if (entry.host.state.status === "failed") throw this.loadFailed(entry);
        return this.checkPurpose(entry, purpose)[purpose].requireReady();
    }

    /** The answer to a request for a model whose load failed: 500 model_load_failed, Retry-After the rest of its back-off. */
    private loadFailed(entry: ModelEntry): ModelLoadFailedError {
        const seconds = Math.max(1, Math.ceil((entry.retryAt - this.now()) / 1000));
        return new ModelLoadFailedError(`The model '${entry.id}' failed to load (see the server log); a request in ${seconds} s tries again.`, seconds);
    }

    private checkPurpose(entry: ModelEntry, purpose: ModelPurpose): ModelEntry {
        if (entry.purpose === undefined || entry.purpose === purpose) return entry;
        const embeddingModels = this.entries.filter((other) => other.purpose === "embedding").map((other) => `'${other.id}'`);
        const message = purpose === "embedding"
            ? `The model '${entry.id}' is a chat model and does not compute embeddings; ask for an embedding model`
            + (embeddingModels.length > 0 ? ` (this server serves ${embeddingModels.join(", ")})` : ", and serve one beside it, e.g. --model embed=hf:Qwen/Qwen3-Embedding-0.6B-GGUF/Qwen3-Embedding-0.6B-Q8_0.gguf")
            + "."
            : `The model '${entry.id}' is an embedding model: use it with /v1/embeddings or /api/embed, and ask a chat model for generations.`;
        throw new InvalidRequestError(message, "model", "model_not_supported");
    }

    /** Waits for `loading` up to the queue timeout; then 503 model_loading (the load goes on). */
    private async waitForLoad(loading: Promise<void>, signal: AbortSignal): Promise<void> {
        let timer: NodeJS.Timeout | undefined;
        let onAbort: (() => void) | undefined;
        const stopped = new Promise<never>((_resolve, reject) => {
            timer = setTimeout(() => reject(new ModelLoadingError("The model is loading and did not finish within the queue timeout; retry shortly.")),
                this.options.loadWaitMs);
            onAbort = () => reject(signal.reason);
            signal.addEventListener("abort", onAbort, { once: true });
        });
        try {
            if (signal.aborted) throw signal.reason;
            await Promise.race([loading, stopped]);
        } finally {
            clearTimeout(timer);
            if (onAbort !== undefined) signal.removeEventListener("abort", onAbort);
        }
    }

    /**
     * Starts loading `entry` unless it is loaded or loading (after its unload, when one is under
     * way: never two engines of one model); the promise settles with the load. A failed load
     * leaves the entry failed, with a back-off before the next try; no room at start leaves it unloaded.
     */
    private ensureLoading(entry: ModelEntry): Promise<void> {
        if (entry.loading !== undefined) return entry.loading;
        entry.host.reset();
        const loading: Promise<void> = (entry.unloading ?? Promise.resolve())
            .then(() => this.options.loader.load(entry, (bytes) => this.makeRoom(entry, bytes), this.closing.signal))
            .then((loaded) => {
                entry.memoryBytes = loaded.memoryBytes;
                entry.reservedBytes = undefined;
                entry.unload = loaded.unload;
                entry.failures = 0;
                entry.lastUsed = this.now();
                this.startKeepAlive(entry);
                this.roomChanges.emit("change");
            }, (error: unknown) => {
                entry.reservedBytes = undefined;
                if (entry.loading === loading) entry.loading = undefined;
                if (error instanceof NoRoomAtStartError) {
                    entry.host.setUnloaded();
                } else {
                    const { firstMs, maxMs } = this.options.loadRetry ?? defaultLoadRetry;
                    entry.failures += 1;
                    entry.retryAt = this.now() + Math.min(maxMs, firstMs * 2 ** (entry.failures - 1));
                    entry.host.setFailed(error instanceof Error ? error : new Error(String(error)));
                }
                this.roomChanges.emit("change");
                throw error;
            });
        entry.loading = loading;
        loading.catch(() => undefined);
        return loading;
    }

    /**
     * Unloads idle models, least recently used first, until `bytes` more (and one more model) fit,
     * then holds that room for `loading` until its load ends. Waits when no model is idle (one in
     * use, loading or being unloaded frees its room later); fails only when pinned models fill it.
     */
    private async makeRoom(loading: ModelEntry, bytes: number): Promise<void> {
        const { maxLoaded, maxMemoryBytes } = this.options;
        // What holds memory: a loaded model, one being unloaded (until its engine is disposed), a load that was given room.
        const holders = (): ModelEntry[] => this.entries.filter((entry) => entry !== loading
            && (entry.loaded || entry.unloading !== undefined || entry.reservedBytes !== undefined));
        const fits = (): boolean => {
            const held = holders();
            const memory = held.reduce((sum, entry) => sum + entry.memoryBytes + (entry.reservedBytes ?? 0), 0);
            return held.length < maxLoaded && (maxMemoryBytes === undefined || memory + bytes <= maxMemoryBytes || held.length === 0);
        };
        if (loading.startupExtra && !fits()) throw new NoRoomAtStartError(loading.id);
        while (!fits()) {
            const idle = this.entries
                .filter((entry) => entry !== loading && entry.loaded && entry.inFlight === 0 && !entry.pinned)
                .sort((a, b) => a.lastUsed - b.lastUsed)[0];
            if (idle !== undefined) {
                await this.unloadEntry(idle);
                continue;
            }
            // Pinned models are never unloaded: when they alone hold the room, no wait frees it.
            if (holders().every((entry) => entry.pinned && entry.unloading === undefined)) {
                throw new ServerError(`No room to load '${loading.id}': the loaded models are pinned (MAPLE_PIN_DEFAULT_MODEL) and fill `
                    + "MAPLE_MAX_LOADED_MODELS or MAPLE_MAX_MODEL_MEMORY.");
            }
            await once(this.roomChanges, "change", { signal: this.closing.signal });
        }
        loading.reservedBytes = bytes;
    }

    /**
     * Unloads a loaded `entry`: requests no longer get it from now on, but it counts toward the
     * bounds (its memory) until its engine is disposed, and a load of it waits until then.
     * Rejects when the dispose does; the entry is unloaded all the same.
     */
    private unloadEntry(entry: ModelEntry): Promise<void> {
        this.stopKeepAlive(entry);
        const unload = entry.unload;
        entry.unload = undefined;
        entry.loading = undefined;
        entry.host.setUnloaded();
        const disposed = Promise.resolve().then(() => unload?.()).finally(() => {
            entry.memoryBytes = 0;
            entry.unloading = undefined;
            this.roomChanges.emit("change");
        });
        entry.unloading = disposed.catch(() => undefined);
        return disposed;
    }

    private startKeepAlive(entry: ModelEntry): void {
        const keepAliveMs = entry.keepAliveMs === undefined ? this.options.keepAliveMs : entry.keepAliveMs ?? undefined;
        if (keepAliveMs === undefined || entry.pinned || entry.inFlight > 0 || !entry.loaded) return;
        this.stopKeepAlive(entry);
        entry.keepAliveTimer = setTimeout(() => {
            if (entry.inFlight === 0 && entry.loaded) this.unloadEntry(entry).catch((error: unknown) => this.options.onUnloadError?.(entry, error));
        }, keepAliveMs);
        entry.keepAliveTimer.unref();
    }

    private stopKeepAlive(entry: ModelEntry): void {
        clearTimeout(entry.keepAliveTimer);
        entry.keepAliveTimer = undefined;
    }
}

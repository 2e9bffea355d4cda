import { once, setMaxListeners } from "node:events";
import { readFile, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { createServer, type Server } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { defaultCacheRamMiB, type MapleConfig } from "../config/settings.js";
import { ContextDoesNotFitError } from "../engine/contextFit.js";
import { loadLlamaEngine, type PromptCacheSettings } from "../engine/loadLlamaEngine.js";
import type { Engine } from "../engine/types.js";
import { loadEmbeddingEngine } from "../engine/embeddingEngine.js";
import { readModelFileFacts } from "../engine/modelFileFacts.js";
import type { LlamaLog } from "../engine/openLlama.js";
import { BackendUnavailableError, openBackend } from "../engine/openBackend.js";
import { storedModelLookup } from "../models/modelStore.js";
import { servedModelSpecs, splitModelSpecs } from "../models/servedModelSpecs.js";
import { ModelRegistry, NoRoomAtStartError, type ModelLoader } from "../core/modelRegistry.js";
import { buildApp } from "../http/app.js";
import { ModelSpecError, resolveModel } from "../models/resolveModel.js";
import { chooseChatFormat, type ChatFormatSetting } from "../chatFormat/formats/index.js";
import { chatMlFallbackTemplate } from "../chatFormat/template.js";
import { openResponseStore } from "../responses/openResponseStore.js";
import { Scheduler } from "../scheduler/scheduler.js";
import { createLogger } from "./logger.js";
import type { ModelHost, ReadyModel } from "../core/modelHost.js";
import { systemFingerprint } from "./systemFingerprint.js";
import { gibibytes, processMemory } from "../processMemory.js";

export type LoadStage = "download" | "verify" | "write" | "load";

export interface StartServerOptions {
    logger?: Logger;
    /** Progress of long start-up work (the CLI draws bars from it). */
    onProgress?: (stage: LoadStage, done: number, total: number) => void;
}

export interface RunningServer {
    app: FastifyInstance;
    /** The default model's host (the first served model). */
    host: ModelHost;
    /** Every served model. */
    models: ModelRegistry;
    /** e.g. http://127.0.0.1:8080 */
    url: string;
    /** The second listener's URL (MAPLE_OLLAMA_PORT, e.g. http://127.0.0.1:11434); undefined without one. */
    ollamaUrl: string | undefined;
    /** Settles when the default model is loaded (resolves) or failed to load (rejects). */
    ready: Promise<void>;
    /**
     * Drains, then stops: /health answers 503 at once while requests are still served for
     * `drainMs` (default 0; skipped while the model is not ready, as no balancer sends to it then),
     * so balancers take the replica out before it refuses anything. Then stops accepting requests
     * (new ones get 503 server_shutting_down), lets in-flight requests finish for up to `graceMs`
     * (default 0: cancel at once), cancels the rest with an error and frees the engine. Calling
     * it again while it drains ends the drain at once; every call settles when the server is closed.
     */
    close(options?: { graceMs?: number; drainMs?: number }): Promise<void>;
}

export const version: string = (JSON.parse(await readFile(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string }).version;

/**
 * Listens at once and loads the model in the background: until it is ready, API routes answer
 * 503 model_loading and /health reports the load.
 */
export async function startServer(config: MapleConfig, options: StartServerOptions = {}): Promise<RunningServer> {
    const logger = options.logger ?? createLogger(config.logLevel);
    const models = new ModelRegistry(servedModelSpecs([...splitModelSpecs(config.model), ...splitModelSpecs(config.models)], config.modelId), config.pinDefaultModel, {
        loader: modelLoader(config, logger, options.onProgress),
        maxLoaded: config.maxLoadedModels,
        maxMemoryBytes: config.maxModelMemoryMiB === undefined ? undefined : config.maxModelMemoryMiB * (1 << 20),
        keepAliveMs: config.keepAliveSeconds < 0 ? undefined : config.keepAliveSeconds * 1000,
        loadWaitMs: config.queueTimeoutSeconds * 1000,
        strict: config.strictModel,
        loadOnDemand: config.loadOnDemand,
        onUnloadError: (entry, error) => logger.error({ err: error, model: entry.id }, "unloading an idle model failed; it is unloaded all the same")
    });
    const host = models.default.chat;
    const shutdown = new AbortController();
    // Every request in flight listens on it (requestCancellation), so more than Node's default 10
    // at once is normal, not a leak: each listener is removed when its response closes.
    setMaxListeners(0, shutdown.signal);
    // Redis connects in the background: requests that need no store are served meanwhile.
    const responseStore = openResponseStore(config, logger);
    const app = buildApp({ config, host, models, logger, version, shutdownSignal: shutdown.signal, responseStore });
    app.addHook("onClose", () => responseStore.close());
    await app.listen({ host: config.host, port: config.port }).catch(async (error: unknown) => {
        await app.close();
        throw listenError(error, config.host, config.port, "--port or MAPLE_PORT");
    });
    const urlOf = (server: Server, fallbackPort: number): string => {
        const address = server.address();
        const port = typeof address === "object" && address !== null ? address.port : fallbackPort;
        return `http://${hostAndPort(config.host, port)}`;
    };
    const url = urlOf(app.server, config.port);
    const ollamaListener = config.ollamaPort === undefined ? undefined : await listenAlso(app, config.host, config.ollamaPort).catch(async (error: unknown) => {
        // A taken port: nothing stays listening on the first one either.
        await app.close();
        throw listenError(error, config.host, config.ollamaPort ?? 0, "--ollama-port or MAPLE_OLLAMA_PORT");
    });
    const ollamaUrl = ollamaListener === undefined ? undefined : urlOf(ollamaListener, config.ollamaPort ?? 0);
    logger.info({ url, ...(ollamaUrl !== undefined ? { ollamaUrl } : {}), version }, "Maple is listening; loading the model");
    // The `maple` command always sets it; a server started some other way may not have.
    if (process.env.UV_THREADPOOL_SIZE === undefined) logger.warn(threadPoolWarning);
    logMemory(logger);

    const ready = models.start();
    ready.catch(() => undefined);

    let closing: Promise<void> | undefined;
    const drainCut = new AbortController();
    const stop = async (graceMs: number, drainMs: number): Promise<void> => {
        host.startDraining();
        if (drainMs > 0 && host.state.status === "ready") {
            await sleep(drainMs, undefined, { signal: drainCut.signal }).catch(() => undefined);
            logger.info("drained: no longer accepting requests; finishing in-flight ones");
        }
        models.stopLoading();
        const grace = setTimeout(() => shutdown.abort(), graceMs);
        await Promise.all([app.close(), ollamaListener === undefined ? undefined : closeListener(ollamaListener)]);
        clearTimeout(grace);
        await models.close();
    };
    return {
        app, host, models, url, ollamaUrl, ready,
        close({ graceMs = 0, drainMs = 0 } = {}) {
            // A second call cuts a drain short (a second signal hurries the shutdown).
            if (closing !== undefined) drainCut.abort();
            closing ??= stop(graceMs, drainMs);
            return closing;
        }
    };
}

/** The server could not listen where it was told to: the port is taken or not permitted. */
export class ListenError extends Error {
    constructor(message: string, options: { cause: unknown }) {
        super(message, options);
        this.name = "ListenError";
    }
}

/** `127.0.0.1:8080`, or `[::1]:8080` for an IPv6 host. */
function hostAndPort(host: string, port: number): string {
    return `${host.includes(":") ? `[${host}]` : host}:${port}`;
}

const listenFailures: Partial<Record<string, string>> = {
    EADDRINUSE: "the port is already in use (another server, or Maple already running?)",
    EACCES: "permission denied (ports below 1024 need privileges)",
    EADDRNOTAVAIL: "no network interface has that address"
};

/** Names the address and what to change in place of Node's `listen EADDRINUSE: address already in use` and its stack. */
function listenError(error: unknown, host: string, port: number, setting: string): unknown {
    const why = listenFailures[(error as NodeJS.ErrnoException).code ?? ""];
    if (why === undefined) return error;
    return new ListenError(`cannot listen on ${hostAndPort(host, port)}: ${why}; choose another with ${setting}`, { cause: error });
}

/**
 * A second port for the same app (MAPLE_OLLAMA_PORT): its requests go to the app's own handler,
 * so routes, hooks, auth, metrics and the queue are one, whichever port a request came in on.
 * The slow-client limits are the app's (see buildApp).
 */
async function listenAlso(app: FastifyInstance, host: string, port: number): Promise<Server> {
    const main = app.server;
    const server = createServer((request, response) => main.emit("request", request, response));
    server.headersTimeout = main.headersTimeout;
    server.requestTimeout = main.requestTimeout;
    server.keepAliveTimeout = main.keepAliveTimeout;
    server.listen(port, host);
    await once(server, "listening");
    return server;
}

/** Stops accepting on the second port and waits for its requests to end (idle keep-alive sockets are closed). */
async function closeListener(server: Server): Promise<void> {
    const closed = once(server, "close");
    server.close();
    server.closeIdleConnections();
    await closed;
}

export const threadPoolWarning = "UV_THREADPOOL_SIZE is not set, so libuv's pool has 4 threads and llama.cpp's decode and "
    + "sampling calls hop between them (measured: 1-5% slower decoding on qwen3-0.6b with 2 threads). Start Maple with the maple command, or set "
    + "UV_THREADPOOL_SIZE=1 before node starts (setting it from an ES module is too late).";

const loadingStages = { download: "downloading", verify: "verifying", write: "writing" } as const;

/**
 * How the registry loads a model: resolves its spec (download, synthetic write), reads its GGUF
 * header for its purpose and memory, lets the registry make room, then loads the chat engine (with
 * its scheduler) or the embedding engine. Only the default model's load draws the CLI's bars and
 * takes --chat-template.
 */
function modelLoader(config: MapleConfig, logger: Logger, onProgress: StartServerOptions["onProgress"]): ModelLoader {
    return {
        async load(entry, makeRoom, signal) {
            const isDefault = entry.atStartup;
            const progress = isDefault ? onProgress : undefined;
            try {
                const templateOverride = config.chatTemplateFile === undefined || !isDefault ? undefined : await readChatTemplateFile(config.chatTemplateFile);
                const model = await resolveModel(entry.spec, {
                    modelsDir: config.modelsDir,
                    signal,
                    onProgress: (work, done, total) => {
                        entry.host.setLoading(loadingStages[work], total > 0 ? done / total : undefined);
                        progress?.(work, done, total);
                    },
                    onFallback: (reason) => logger.warn(reason)
                });
                entry.file = resolve(model.path);
                const modelFileBytes = (await stat(model.path)).size;
                const onLog: LlamaLog = (level, message) => logger[level]({ source: "llama.cpp", model: entry.id }, message);
                // The backend is chosen from the file's weight types before anything loads (chooseBackend).
                const { llama, choice } = await openBackend(model.path, { gpu: config.gpu, threads: config.threads, onLog });
                for (const warning of choice.warnings) logger.warn({ model: entry.id, device: choice.backend }, warning);
                const facts = await readModelFileFacts(model.path, {
                    contextSize: config.contextSize, slots: config.parallel, batchSize: config.batchSize, swaFullCache: config.swaFull, kvBudgetBytes: kvBudgetBytes(config, modelFileBytes)
                }, llama);
                entry.purpose = facts.purpose;
                entry.host.setLoading("loading", 0);
                await makeRoom(facts.memoryBytes);
                logger.info({ model: entry.id, path: model.path, source: model.source, purpose: facts.purpose, memoryMiB: Math.round(facts.memoryBytes / (1 << 20)) },
                    "loading model");
                const onLoadProgress = (fraction: number): void => {
                    entry.host.setLoading("loading", fraction);
                    progress?.("load", fraction, 1);
                };
                if (facts.purpose === "embedding") {
                    const embedder = await loadEmbeddingEngine({
                        modelPath: model.path, threads: config.threads, contextSize: config.contextSize, batchSize: config.batchSize, weights: config.weights,
                        gpu: config.gpu, gpuLayers: config.gpuLayers, signal, onLoadProgress, onLog
                    });
                    entry.embedding.setReady({ embedder, source: model.source });
                    logger.info({ model: entry.id, dimensions: embedder.dimensions, synthetic: embedder.model.synthetic, device: embedder.device, loadSeconds: embedder.loadSeconds },
                        "embedding model ready");
                    return { memoryBytes: facts.memoryBytes, unload: () => embedder.dispose() };
                }
                const engine = await loadLlamaEngine({
                    modelPath: model.path,
                    threads: config.threads,
                    contextSize: config.contextSize,
                    slots: config.parallel,
                    batchSize: config.batchSize,
                    kvBudgetBytes: kvBudgetBytes(config, modelFileBytes),
                    promptCache: promptCacheSettings(config, modelFileBytes),
                    swaFullCache: config.swaFull,
                    weights: config.weights,
                    gpu: config.gpu,
                    gpuLayers: config.gpuLayers,
                    signal,
                    onLoadProgress,
                    onLog
                });
                if ((templateOverride ?? engine.model.chatTemplate) === undefined) logger.warn({ model: entry.id }, "the model has no chat template; /v1/chat/completions uses ChatML");
                const ready = readyModel(engine, config, model.source, await systemFingerprint(version, model.path, engine), templateOverride,
                    isDefault ? config.chatFormat : "auto");
                entry.chat.setReady(ready);
                const summary = {
                    model: model.source, id: entry.id, architecture: engine.model.architecture, dtype: engine.model.dtype, synthetic: engine.model.synthetic,
                    contextSize: engine.runtime.contextSize, contextReason: engine.runtime.contextReason, kvBytesPerSlot: engine.runtime.kvBytesPerSlot,
                    slidingWindowCache: engine.runtime.slidingWindowCache, slots: engine.runtime.slots, threads: engine.runtime.threads,
                    device: engine.runtime.device, deviceNames: engine.runtime.deviceNames, deviceReason: engine.runtime.deviceReason,
                    gpuLayers: `${engine.runtime.gpuLayers}/${engine.runtime.modelLayers}`, samplingInDecode: engine.runtime.samplingInDecode, loadSeconds: engine.runtime.loadSeconds,
                    weights: engine.runtime.weights, weightsReason: engine.runtime.weightsReason,
                    chatFormat: ready.chatTemplate.format.name, chatFormatReason: ready.chatFormatReason
                };
                if (engine.model.synthetic) logger.warn(summary, "model ready: SYNTHETIC, random weights; answers are meaningless");
                else logger.info(summary, "model ready");
                // What the engine allocated (node-llama-cpp may pad a slot's context), not the estimate made before loading.
                return { memoryBytes: facts.weightsBytes + engine.runtime.slots * engine.runtime.kvBytesPerSlot, unload: () => engine.dispose() };
            } catch (error) {
                entry.host.setFailed(error as Error);
                // A bad model spec is the user's mistake: one clear line, no stack trace.
                if (error instanceof ModelSpecError || error instanceof ContextDoesNotFitError || error instanceof BackendUnavailableError) logger.error(error.message);
                else if (error instanceof NoRoomAtStartError) logger.info(error.message);
                else if (!signal.aborted) logger.error({ err: error, model: entry.id }, "the model failed to load");
                throw error;
            }
        },
        storedModels: () => storedModelLookup(config.modelsDir)
    };
}

/**
 * What a loaded engine serves with: its scheduler over the engine's slots, with the queue limits
 * of `config`, the chat template in force (`templateOverride`, else the model's own, else ChatML)
 * and its chat format (`chatFormat`, else detected from that template).
 */
export function readyModel(engine: Engine, config: Pick<MapleConfig, "maxQueueDepth" | "queueTimeoutSeconds">, source: string,
    fingerprint: string, templateOverride?: string, chatFormat: ChatFormatSetting = "auto"): ReadyModel & { chatFormatReason: string } {
    const scheduler = new Scheduler({
        slots: engine.runtime.slots,
        maxQueueDepth: config.maxQueueDepth,
        queueTimeoutMs: config.queueTimeoutSeconds * 1000,
        chooseSlot: (freeSlots, tokens, cacheKey) => engine.chooseSlot(freeSlots, tokens, cacheKey)
    });
    const template = templateOverride ?? engine.model.chatTemplate ?? chatMlFallbackTemplate;
    const { format, reason } = chooseChatFormat(chatFormat, template);
    return {
        engine, scheduler, source, systemFingerprint: fingerprint, chatFormatReason: reason,
        chatTemplate: { template, bosToken: engine.model.bosToken, eosToken: engine.model.eosToken, format }
    };
}

/**
 * The memory the slots' KV caches may take: the process's (a container's limit, else the
 * machine's), less the weights, the RAM prompt cache's bound and a reserve for everything else
 * (compute buffers, the server: 10%, at least 1 GiB).
 */
function kvBudgetBytes(config: MapleConfig, modelFileBytes: number): number {
    const total = processMemory().totalBytes;
    const ramCacheBytes = (config.cacheRamMiB ?? defaultCacheRamMiB(total, modelFileBytes)) * (1 << 20);
    return Math.max(0, total - modelFileBytes - ramCacheBytes - Math.max(1 << 30, total / 10));
}

/** The memory every memory-sized default reads (weights, slots, RAM cache), said once at start. */
function logMemory(logger: Logger): void {
    const memory = processMemory();
    const figures = { memoryGiB: gibibytes(memory.totalBytes), availableGiB: gibibytes(memory.availableBytes), machineGiB: gibibytes(memory.machineBytes) };
    if (memory.limitBytes === undefined) logger.info(figures, "memory: the machine's (no container limit below it)");
    else logger.info(figures, "memory: the container's limit (cgroup); weights, slots and the RAM cache are sized within it");
}

/** The prompt cache's tiers from the settings; undefined when both are off. */
function promptCacheSettings(config: MapleConfig, modelFileBytes: number): PromptCacheSettings | undefined {
    const ramMiB = config.cacheRamMiB ?? defaultCacheRamMiB(processMemory().totalBytes, modelFileBytes);
    const diskMiB = config.cacheDir === undefined ? 0 : config.cacheDiskMiB;
    if (ramMiB === 0 && diskMiB === 0) return undefined;
    return { ramBytes: ramMiB * (1 << 20), diskDir: config.cacheDir, diskBytes: diskMiB * (1 << 20) };
}

async function readChatTemplateFile(path: string): Promise<string> {
    try {
        return await readFile(path, "utf8");
    } catch (error) {
        throw new ModelSpecError(`Cannot read the chat template file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
}

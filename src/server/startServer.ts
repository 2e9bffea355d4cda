import { readFile } from "node:fs/promises";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { MapleConfig } from "../config/settings.js";
import { loadLlamaEngine } from "../engine/llamaEngine.js";
import type { Engine } from "../engine/types.js";
import { buildApp } from "../http/app.js";
import { ModelSpecError, resolveModel } from "../models/resolveModel.js";
import { chatMlFallbackTemplate } from "../chat/template.js";
import { Scheduler } from "../scheduler/scheduler.js";
import { createLogger } from "./logger.js";
import { ModelHost, type ReadyModel } from "../serving/modelHost.js";

export type LoadStage = "download" | "write" | "load";

export interface StartServerOptions {
    logger?: Logger;
    /** Progress of long start-up work (the CLI draws bars from it). */
    onProgress?: (stage: LoadStage, done: number, total: number) => void;
}

export interface RunningServer {
    app: FastifyInstance;
    host: ModelHost;
    /** e.g. http://127.0.0.1:8080 */
    url: string;
    /** Settles when the model is loaded (resolves) or failed to load (rejects). */
    ready: Promise<Engine>;
    /**
     * Stops accepting requests (new ones get 503 server_shutting_down), lets in-flight requests
     * finish for up to `graceMs` (default 0: cancel at once), then cancels the rest with an error
     * and frees the engine.
     */
    close(options?: { graceMs?: number }): Promise<void>;
}

export const version: string = (JSON.parse(await readFile(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string }).version;

/**
 * Listens at once and loads the model in the background: until it is ready, API routes answer
 * 503 model_loading and /health reports the load.
 */
export async function startServer(config: MapleConfig, options: StartServerOptions = {}): Promise<RunningServer> {
    const logger = options.logger ?? createLogger(config.logLevel);
    const host = new ModelHost();
    const shutdown = new AbortController();
    const app = buildApp({ config, host, logger, version, shutdownSignal: shutdown.signal });
    await app.listen({ host: config.host, port: config.port });
    const address = app.server.address();
    const port = typeof address === "object" && address !== null ? address.port : config.port;
    const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
    logger.info({ url, version }, "Maple is listening; loading the model");
    // The `maple` command always sets it; a server started some other way may not have.
    if (process.env.UV_THREADPOOL_SIZE === undefined) logger.warn(threadPoolWarning);

    const loading = new AbortController();
    const ready = loadModel(config, host, logger, loading.signal, options.onProgress);
    ready.catch(() => undefined);

    let closed = false;
    return {
        app, host, url, ready,
        async close({ graceMs = 0 } = {}) {
            if (closed) return;
            closed = true;
            loading.abort();
            const grace = setTimeout(() => shutdown.abort(), graceMs);
            await app.close();
            clearTimeout(grace);
            const engine = await ready.catch(() => undefined);
            await engine?.dispose();
        }
    };
}

export const threadPoolWarning = "UV_THREADPOOL_SIZE is not set, so libuv's pool has 4 threads and llama.cpp's decode and "
    + "sampling calls hop between them (measured: 16% slower decoding on qwen3-0.6b). Start Maple with the maple command, or set "
    + "UV_THREADPOOL_SIZE=1 before node starts (setting it from an ES module is too late).";

async function loadModel(config: MapleConfig, host: ModelHost, logger: Logger, signal: AbortSignal,
    onProgress: StartServerOptions["onProgress"]): Promise<Engine> {
    try {
        const templateOverride = config.chatTemplateFile === undefined ? undefined : await readChatTemplateFile(config.chatTemplateFile);
        const model = await resolveModel(config.model, {
            modelsDir: config.modelsDir,
            signal,
            onProgress: (work, done, total) => {
                host.setLoading(work === "download" ? "downloading" : "writing", total > 0 ? done / total : undefined);
                onProgress?.(work, done, total);
            },
            onFallback: (reason) => logger.warn(reason)
        });
        logger.info({ path: model.path, source: model.source }, "loading model");
        host.setLoading("loading", 0);
        const engine = await loadLlamaEngine({
            modelPath: model.path,
            threads: config.threads,
            contextSize: config.contextSize,
            slots: config.parallel,
            batchSize: config.batchSize,
            signal,
            onLoadProgress: (fraction) => {
                host.setLoading("loading", fraction);
                onProgress?.("load", fraction, 1);
            },
            onLog: (level, message) => logger[level]({ source: "llama.cpp" }, message)
        });
        if ((templateOverride ?? engine.model.chatTemplate) === undefined) logger.warn("the model has no chat template; /v1/chat/completions uses ChatML");
        host.setReady(readyModel(engine, config, model.source, templateOverride));
        logger.info({
            architecture: engine.model.architecture, dtype: engine.model.dtype, synthetic: engine.model.synthetic,
            contextSize: engine.runtime.contextSize, slots: engine.runtime.slots, threads: engine.runtime.threads,
            device: engine.runtime.device, loadSeconds: engine.runtime.loadSeconds
        }, "model ready");
        return engine;
    } catch (error) {
        host.setFailed(error as Error);
        // A bad model spec is the user's mistake: one clear line, no stack trace.
        if (error instanceof ModelSpecError) logger.error(error.message);
        else if (!signal.aborted) logger.error({ err: error }, "the model failed to load");
        throw error;
    }
}

/**
 * What a loaded engine serves with: its scheduler over the engine's slots, with the queue limits
 * of `config`, and the chat template in force (`templateOverride`, else the model's own, else ChatML).
 */
export function readyModel(engine: Engine, config: Pick<MapleConfig, "maxQueueDepth" | "queueTimeoutSeconds">, source: string,
    templateOverride?: string): ReadyModel {
    const scheduler = new Scheduler({
        slots: engine.runtime.slots,
        maxQueueDepth: config.maxQueueDepth,
        queueTimeoutMs: config.queueTimeoutSeconds * 1000,
        cachedPrefixLength: (slot, tokens) => engine.cachedPrefixLength(slot, tokens)
    });
    const template = templateOverride ?? engine.model.chatTemplate ?? chatMlFallbackTemplate;
    return { engine, scheduler, source, chatTemplate: { template, bosToken: engine.model.bosToken, eosToken: engine.model.eosToken } };
}

async function readChatTemplateFile(path: string): Promise<string> {
    try {
        return await readFile(path, "utf8");
    } catch (error) {
        throw new ModelSpecError(`Cannot read the chat template file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
}

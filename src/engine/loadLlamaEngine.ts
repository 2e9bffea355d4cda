import { readFileSync } from "node:fs";
import type { Engine } from "./types.js";
import type { LlamaLog } from "./openLlama.js";
import { openBackend } from "./openBackend.js";
import { flashAttentionCrashes, type GpuSetting } from "./backendChoice.js";
import { describeModel, slidingWindowOf } from "./describeModel.js";
import { fitContextSize } from "./contextFit.js";
import { checkpointsPerSlot, kvCacheBytes, slotBytesAt, slotCacheBytes, type AttentionMetadata } from "./kvCacheBytes.js";
import { LlamaEngine } from "./llamaEngine.js";
import { samplesInsideDecode } from "./nativeBatches.js";
import { timeNativeStateWork } from "./sequenceStateFile.js";
import { CacheReport } from "./promptCache/cacheReport.js";
import { modelIdentity } from "./promptCache/modelIdentity.js";
import { PromptCache } from "./promptCache/promptCache.js";
import { weightsLoadFor, type WeightsSetting } from "./weightsLoad.js";

export interface LlamaEngineOptions {
    modelPath: string;
    /** llama.cpp threads; never more than the cores the process may use (see README). */
    threads: number;
    /**
     * Context window of each slot, in tokens; capped at the model's training context. Undefined:
     * chosen (see fitContextSize): the training context when the slots' KV caches fit in
     * `kvBudgetBytes`, else the largest that does.
     */
    contextSize?: number;
    /** Memory the slots' KV caches may take; an explicit contextSize that needs more is refused (ContextDoesNotFitError). Undefined: not bounded. */
    kvBudgetBytes?: number;
    /** Sequences that generate at once in the one llama.cpp context. */
    slots: number;
    batchSize: number;
    /** llama.cpp's backend (MAPLE_GPU); default "auto": chooseBackend's pick for the model's weight types. */
    gpu?: GpuSetting;
    /** Layers offloaded to a GPU (MAPLE_GPU_LAYERS): node-llama-cpp's gpuLayers; default "auto" (what fits the free VRAM). */
    gpuLayers?: "auto" | "max" | number;
    onLoadProgress?: (fraction: number) => void;
    signal?: AbortSignal;
    /** llama.cpp's own log lines (warnings and errors only). */
    onLog?: LlamaLog;
    /** How the weights reach llama.cpp (chooseWeightsLoad); default "auto". */
    weights?: WeightsSetting;
    /** Saved slot states beyond the slots (see docs/prompt-cache.md); none when absent. */
    promptCache?: PromptCacheSettings;
    /**
     * Sliding-window layers keep every token (llama.cpp's `swa_full`), as before issue 29; default
     * false: the windowed cache, with context checkpoints where prompts are cut back (MAPLE_SWA_FULL).
     */
    swaFullCache?: boolean;
}

export interface PromptCacheSettings {
    /** Host-memory tier bound in bytes; 0 disables it. */
    ramBytes: number;
    /** Disk tier directory (survives restarts) and its bound in bytes. */
    diskDir?: string;
    diskBytes: number;
    /** Where the host-memory tier's files go (a tmpfs); default /dev/shm. */
    ramRoot?: string;
}

/**
 * Whether `npm install` applied scripts/patch-node-llama-cpp.js (it runs as our postinstall).
 * Without it a sampling error inside a decode batch is unhandled and ends the process.
 */
const samplingErrorPatchApplied: boolean = readFileSync(
    new URL("evaluator/LlamaContext/LlamaContext.js", import.meta.resolve("node-llama-cpp")), "utf8"
).includes("maple-patch: per-sequence sampling errors");

/** node-llama-cpp's package.json is not in its exports map: read it beside its entry point (dist/index.js). */
const engineVersion: string = (JSON.parse(readFileSync(new URL("../package.json", import.meta.resolve("node-llama-cpp")), "utf8")) as { version: string }).version;

/** Loads a GGUF model into llama.cpp through node-llama-cpp and runs generations on its slots. */
export async function loadLlamaEngine(options: LlamaEngineOptions): Promise<Engine> {
    const startedAt = performance.now();
    if (!samplingErrorPatchApplied) {
        options.onLog?.("warn", "node-llama-cpp is not patched (was npm install run with --ignore-scripts?): run `node scripts/patch-node-llama-cpp.js`; "
        + "without it a sampling error (e.g. a grammar that logit_bias leaves unsatisfiable) ends the process");
    }
    const { llama, choice } = await openBackend(options.modelPath, { gpu: options.gpu ?? "auto", threads: options.threads, onLog: options.onLog });
    const onDevice = choice.backend !== "cpu" && choice.devices.length > 0;
    const flashAttentionOff = onDevice && flashAttentionCrashes(choice.devices);
    if (flashAttentionOff) options.onLog?.("warn", "flash attention off: Mesa's lavapipe crashes in llama.cpp's Vulkan flash attention (docs/gpu.md)");
    const weights = await weightsLoadFor(options.modelPath, options.weights, !onDevice);
    const model = await llama.loadModel({
        modelPath: options.modelPath,
        useMmap: weights.useMmap,
        gpuLayers: onDevice ? options.gpuLayers ?? "auto" : 0,
        onLoadProgress: options.onLoadProgress,
        loadSignal: options.signal
    });
    try {
        const slidingWindow = slidingWindowOf(model);
        const swaFullCache = options.swaFullCache === true || slidingWindow === 0;
        const architecture = (model.fileInfo.metadata as unknown as { general: { architecture: string } }).general.architecture;
        const attention = (model.fileInfo.metadata as unknown as Record<string, AttentionMetadata | undefined>)[architecture] ?? {};
        const fit = fitContextSize({
            requested: options.contextSize, trainContextSize: model.trainContextSize, slots: options.slots, budgetBytes: options.kvBudgetBytes,
            kvBytesPerSlot: slotBytesAt(attention, options.batchSize, swaFullCache)
        });
        const requestedContextSize = fit.contextSize;
        const context = await model.createContext({
            sequences: options.slots,
            // node-llama-cpp's contextSize is per sequence: each slot gets its own window.
            contextSize: requestedContextSize,
            batchSize: Math.min(options.batchSize, requestedContextSize * options.slots),
            threads: { ideal: options.threads, min: options.threads },
            // Windowed (the default): a sliding-window layer keeps its window and a batch; prefixes are
            // reused exactly through checkpoints and saved states (see WindowedSequence).
            swaFullCache,
            // llama.cpp's own tools default to flash attention where supported (llama-bench: auto);
            // node-llama-cpp defaults it off, which cost prefill speed (measured on maple-preview).
            flashAttention: model.flashAttentionSupported && !flashAttentionOff,
            createSignal: options.signal
        });
        timeNativeStateWork(context);
        const kvBytes = kvCacheBytes(attention, requestedContextSize, context.batchSize);
        // A checkpoint holds the sliding layers' cells (window and a batch); a slot keeps a few (its preamble, its turn boundaries).
        const checkpointBytesPerSlot = slotCacheBytes(kvBytes, requestedContextSize, swaFullCache).checkpoints;
        const sequences = Array.from({ length: options.slots }, () => context.getSequence(swaFullCache ? {} : {
            checkpoints: { max: checkpointsPerSlot, interval: false, maxMemory: checkpointBytesPerSlot }
        }));
        // What each slot got (node-llama-cpp may pad the context): the one figure for the slot size.
        const slotContextSize = sequences[0]?.contextSize ?? requestedContextSize;
        const report = new CacheReport();
        const cache = options.promptCache === undefined ? undefined : await PromptCache.open({
            ...options.promptCache,
            // The slots' checkpoints count inside the host-memory bound.
            ramBytes: Math.max(0, options.promptCache.ramBytes - options.slots * checkpointBytesPerSlot),
            identity: await modelIdentity(options.modelPath, { contextSize: slotContextSize, flashAttention: context.flashAttention, swaFullCache, engineVersion }),
            maxTokens: slotContextSize,
            slidingWindow,
            onEvent: (event) => report.record(event),
            onShortfall: (message) => options.onLog?.("warn", message)
        });
        const samplingInDecode = samplesInsideDecode(context);
        if (!samplingInDecode && llama.gpu === false) {
            options.onLog?.("warn", "node-llama-cpp's addon is the prebuilt one: each token is sampled in a second native job after the decode; "
            + "`node scripts/patch-node-llama-cpp.js` rebuilds it (needs g++ and git), its output says why it could not");
        }
        const loadSeconds = (performance.now() - startedAt) / 1000;
        return new LlamaEngine(llama, model, context, sequences, swaFullCache ? 0 : slidingWindow, cache, report, await describeModel(model, options.modelPath), {
            device: choice.backend,
            deviceNames: choice.devices,
            deviceReason: choice.reason,
            gpuLayers: model.gpuLayers,
            modelLayers: model.fileInsights.totalLayers,
            threads: options.threads,
            contextSize: slotContextSize,
            slots: options.slots,
            batchSize: context.batchSize,
            attention: context.flashAttention === true ? "flash attention (llama.cpp)" : "standard attention (llama.cpp)",
            loadSeconds: Math.round(loadSeconds * 100) / 100,
            kvBytesPerSlot: swaFullCache ? kvBytes.full : kvBytes.windowed,
            kvBytesPerSlotFull: kvBytes.full,
            kvBytesPerSlotWindowed: kvBytes.windowed,
            slidingWindowCache: slidingWindow === 0 ? "none" : swaFullCache ? "full" : "windowed",
            contextReason: fit.reason,
            checkpointBytesPerSlot,
            engineVersion: `node-llama-cpp ${engineVersion}`,
            engineBuild: `node-llama-cpp ${engineVersion}; llama.cpp ${llama.llamaCppRelease.repo} ${llama.llamaCppRelease.release} (${llama.buildType}); `
                + `${llama.gpu === false ? "cpu" : llama.gpu}${samplingInDecode ? "; sampling in the decode job" : ""}`,
            samplingInDecode,
            weights: weights.useMmap ? "mmap" : "ram",
            weightsReason: weights.reason
        });
    } catch (error) {
        await model.dispose();
        throw error;
    }
}

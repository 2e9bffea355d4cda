import { GgufInsights, readGgufFileInfo, type Llama } from "node-llama-cpp";
import { ContextDoesNotFitError, fitContextSize } from "./contextFit.js";
import { kvCacheBytes, slotBytesAt, slotCacheBytes, type AttentionMetadata } from "./kvCacheBytes.js";

/** What a model file is for: generating text, or embedding it (a GGUF with a pooling type). */
export type ModelPurpose = "chat" | "embedding";

export interface ModelFileFacts {
    purpose: ModelPurpose;
    /** The embedding width (GGUF `ARCH.embedding_length`). */
    embeddingLength: number;
    /** The weights' bytes (tensor data). */
    weightsBytes: number;
    /** Weights plus the KV cache of the layout asked for: what loading it costs in memory. */
    memoryBytes: number;
}

/** A GGUF that states no training context. */
const fallbackContextSize = 4096;

export interface ModelLayout {
    /** Per slot; undefined: fitted as the engine will fit it (the training context, or the largest within `kvBudgetBytes`). */
    contextSize: number | undefined;
    slots: number;
    batchSize: number;
    /** The sliding-window layers' full cache (MAPLE_SWA_FULL), else the windowed one. */
    swaFullCache: boolean;
    /** What the slots' caches may take when the context is chosen (the engine's `kvBudgetBytes`); undefined: not bounded. */
    kvBudgetBytes?: number;
}

/**
 * Reads a GGUF's header (not its weights) to tell, before loading it, whether it is an embedding
 * model (llama.cpp pools its outputs: `ARCH.pooling_type` mean, cls, last or rank) and how much
 * memory it will take with `layout`, so the model registry can make room first. `llama`: the
 * process's (openLlama); without it node-llama-cpp opens a backend-less one of its own, which
 * takes llama.cpp's log away from a Llama opened after it (see openLlama).
 */
export async function readModelFileFacts(path: string, layout: ModelLayout, llama?: Llama): Promise<ModelFileFacts> {
    const info = await readGgufFileInfo(path, { readTensorInfo: true });
    const metadata = info.metadata as unknown as Record<string, { pooling_type?: number; embedding_length?: number; context_length?: number } | undefined>
        & { general: { architecture: string } };
    const architecture = metadata[metadata.general.architecture];
    const purpose: ModelPurpose = (architecture?.pooling_type ?? 0) > 0 ? "embedding" : "chat";
    const insights = await GgufInsights.from(info, llama);
    const weightsBytes = insights.modelSize;
    const trainContext = architecture?.context_length ?? layout.contextSize ?? fallbackContextSize;
    if (purpose === "chat") {
        // Maple's own count from the GGUF's attention layout, the one the engine sizes slots with:
        // node-llama-cpp's estimate does not know every architecture's sliding-window layers
        // (maple-preview with 4 × 131072 tokens: ~119 GiB estimated, ~11 GiB allocated).
        const attention = (architecture ?? {}) as AttentionMetadata;
        const slotBytes = slotBytesAt(attention, layout.batchSize, layout.swaFullCache);
        const contextSize = fittedContextSize(layout, trainContext, slotBytes);
        const slot = slotCacheBytes(kvCacheBytes(attention, contextSize, layout.batchSize), contextSize, layout.swaFullCache);
        return { purpose, embeddingLength: architecture?.embedding_length ?? 0, weightsBytes, memoryBytes: weightsBytes + layout.slots * slot.kv };
    }
    const contextSize = Math.min(layout.contextSize ?? trainContext, trainContext);
    const context = insights.estimateContextResourceRequirements({
        contextSize, sequences: 1, batchSize: layout.batchSize, modelGpuLayers: 0, isEmbeddingContext: true, swaFullCache: layout.swaFullCache
    });
    return { purpose, embeddingLength: architecture?.embedding_length ?? 0, weightsBytes, memoryBytes: weightsBytes + context.cpuRam + context.gpuVram };
}

/** The context each slot will get (fitContextSize, as the engine does); when none fits, the training context (the load then says why). */
function fittedContextSize(layout: ModelLayout, trainContextSize: number, kvBytesPerSlot: (contextSize: number) => number): number {
    try {
        return fitContextSize({ requested: layout.contextSize, trainContextSize, slots: layout.slots, budgetBytes: layout.kvBudgetBytes, kvBytesPerSlot }).contextSize;
    } catch (error) {
        if (error instanceof ContextDoesNotFitError) return Math.min(layout.contextSize ?? trainContextSize, trainContextSize);
        throw error;
    }
}

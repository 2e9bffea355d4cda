import { GgufInsights, readGgufFileInfo } from "node-llama-cpp";

/** What a model file is for: generating text, or embedding it (a GGUF with a pooling type). */
export type ModelPurpose = "chat" | "embedding";

export interface ModelFileFacts {
    purpose: ModelPurpose;
    /** The embedding width (GGUF `ARCH.embedding_length`). */
    embeddingLength: number;
    /** Weights plus the KV cache and compute buffers of the layout asked for: what loading it costs in memory. */
    memoryBytes: number;
}

/** A GGUF that states no training context. */
const fallbackContextSize = 4096;

export interface ModelLayout {
    /** Per slot; undefined (fitted at load): the model's training context, the most a fit can choose, so the estimate is an upper bound. */
    contextSize: number | undefined;
    slots: number;
    batchSize: number;
    /** The sliding-window layers' full cache (MAPLE_SWA_FULL), else the windowed one. */
    swaFullCache: boolean;
}

/**
 * Reads a GGUF's header (not its weights) to tell, before loading it, whether it is an embedding
 * model (llama.cpp pools its outputs: `ARCH.pooling_type` mean, cls, last or rank) and how much
 * memory it will take with `layout`, so the model registry can make room first.
 */
export async function readModelFileFacts(path: string, layout: ModelLayout): Promise<ModelFileFacts> {
    const info = await readGgufFileInfo(path, { readTensorInfo: true });
    const metadata = info.metadata as unknown as Record<string, { pooling_type?: number; embedding_length?: number; context_length?: number } | undefined>
        & { general: { architecture: string } };
    const architecture = metadata[metadata.general.architecture];
    const purpose: ModelPurpose = (architecture?.pooling_type ?? 0) > 0 ? "embedding" : "chat";
    const insights = await GgufInsights.from(info);
    const trainContext = architecture?.context_length ?? layout.contextSize ?? fallbackContextSize;
    const contextSize = Math.min(layout.contextSize ?? trainContext, trainContext);
    const context = insights.estimateContextResourceRequirements({
        contextSize: contextSize * (purpose === "chat" ? layout.slots : 1),
        sequences: purpose === "chat" ? layout.slots : 1,
        batchSize: layout.batchSize,
        modelGpuLayers: 0,
        isEmbeddingContext: purpose === "embedding",
        swaFullCache: layout.swaFullCache
    });
    return { purpose, embeddingLength: architecture?.embedding_length ?? 0, memoryBytes: insights.modelSize + context.cpuRam + context.gpuVram };
}

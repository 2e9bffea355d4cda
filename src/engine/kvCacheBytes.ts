/**
 * The KV cache's bytes per slot, from the GGUF's attention metadata: what the context allocates
 * for one slot's cells, with the full sliding-window cache (every layer holds every token, as
 * Maple runs today) and with the windowed one (llama.cpp's default: a sliding-window layer holds
 * only its window and one batch of cells). The difference is what a context of the model's own
 * length costs (issue 29): on maple-preview 6 of 24 layers are global.
 */

/** `ARCH.*` metadata that sizes the cache (GGUF names). */
export interface AttentionMetadata {
    block_count?: number;
    embedding_length?: number;
    attention?: {
        head_count?: number | readonly number[];
        head_count_kv?: number | readonly number[];
        key_length?: number;
        value_length?: number;
        sliding_window?: number;
        /** Per layer (true: sliding-window), or llama.cpp's period n (layer i slides unless i % n = n − 1). */
        sliding_window_pattern?: number | readonly boolean[];
    };
}

export interface KvCacheBytes {
    /** Bytes of one token's cells in the global (full-attention) layers and in the sliding-window layers. */
    globalBytesPerToken: number;
    slidingBytesPerToken: number;
    /** One slot of `contextSize` tokens: every layer holds every token. */
    full: number;
    /** One slot with the windowed cache: sliding-window layers hold their window and a batch (llama.cpp pads to 256 cells). */
    windowed: number;
}

/** llama.cpp's default KV type (f16): two bytes an element. */
const elementBytes = 2;
/** llama.cpp pads each stream's cell count to this. */
const cellPadding = 256;

export function kvCacheBytes(metadata: AttentionMetadata, contextSize: number, batchSize: number): KvCacheBytes {
    const layers = metadata.block_count ?? 0;
    const attention = metadata.attention ?? {};
    const window = attention.sliding_window ?? 0;
    const heads = layerValue(attention.head_count, 0, 1);
    let globalBytesPerToken = 0;
    let slidingBytesPerToken = 0;
    for (let layer = 0; layer < layers; layer += 1) {
        const headsKv = layerValue(attention.head_count_kv, layer, layerValue(attention.head_count, layer, 1));
        const headSize = (metadata.embedding_length ?? 0) / Math.max(1, heads);
        const bytes = ((attention.key_length ?? headSize) + (attention.value_length ?? headSize)) * headsKv * elementBytes;
        if (window > 0 && slides(attention.sliding_window_pattern, layer)) slidingBytesPerToken += bytes;
        else globalBytesPerToken += bytes;
    }
    const windowCells = window > 0 ? Math.min(contextSize, Math.ceil((window + batchSize + 1) / cellPadding) * cellPadding) : contextSize;
    return {
        globalBytesPerToken, slidingBytesPerToken,
        full: (globalBytesPerToken + slidingBytesPerToken) * contextSize,
        windowed: globalBytesPerToken * contextSize + slidingBytesPerToken * windowCells
    };
}

/** Checkpoints a windowed slot keeps (node-llama-cpp's `checkpoints.max`): its preamble and its last turn boundaries. */
export const checkpointsPerSlot = 4;

export interface SlotCacheBytes {
    /** The KV cells the context allocates for the slot. */
    kv: number;
    /** The most its checkpoints hold (the windowed cache only: each copies the sliding-window layers' cells). */
    checkpoints: number;
}

/** One slot's cache memory as the engine sets it up: the cache in use, and its checkpoints. */
export function slotCacheBytes(bytes: KvCacheBytes, contextSize: number, swaFullCache: boolean): SlotCacheBytes {
    if (swaFullCache) return { kv: bytes.full, checkpoints: 0 };
    return { kv: bytes.windowed, checkpoints: checkpointsPerSlot * (bytes.windowed - bytes.globalBytesPerToken * contextSize) };
}

/** A slot's cache and checkpoint bytes as a function of its context size: what fitting a context weighs. */
export function slotBytesAt(metadata: AttentionMetadata, batchSize: number, swaFullCache: boolean): (contextSize: number) => number {
    return (contextSize) => {
        const slot = slotCacheBytes(kvCacheBytes(metadata, contextSize, batchSize), contextSize, swaFullCache);
        return slot.kv + slot.checkpoints;
    };
}

function layerValue(value: number | readonly number[] | undefined, layer: number, fallback: number): number {
    if (value === undefined) return fallback;
    return typeof value === "number" ? value : value[layer] ?? fallback;
}

/** Whether a layer is a sliding-window one (llama.cpp's `set_swa_pattern`); without a pattern, every layer slides. */
function slides(pattern: number | readonly boolean[] | undefined, layer: number): boolean {
    if (pattern === undefined) return true;
    if (typeof pattern !== "number") return pattern[layer] === true;
    return pattern === 0 || layer % pattern < pattern - 1;
}

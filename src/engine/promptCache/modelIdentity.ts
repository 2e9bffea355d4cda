import { createHash } from "node:crypto";
import { open } from "node:fs/promises";

/** Bytes hashed from each end of the model file: its GGUF header and metadata, and its last tensor data. */
const sampledBytes = 1 << 20;

/**
 * A name for "this model file, loaded this way": saved KV states are only valid for the exact
 * weights and the exact state layout (context size, attention kernel, full sliding-window cache,
 * llama.cpp build). Hashing the whole file would take seconds for a 6 GB model, so the identity
 * hashes its size, its first and last MiB (header, metadata and the end of the tensor data), and
 * the layout; a different file with the same size and the same ends is not a case we guard.
 */
export async function modelIdentity(modelPath: string, layout: Record<string, string | number | boolean>): Promise<string> {
    const hash = createHash("sha256");
    const file = await open(modelPath, "r");
    try {
        const { size } = await file.stat();
        hash.update(`size=${size}\n`);
        const length = Math.min(sampledBytes, size);
        const head = Buffer.alloc(length);
        await file.read(head, 0, length, 0);
        const tail = Buffer.alloc(length);
        await file.read(tail, 0, length, size - length);
        hash.update(head).update(tail);
    } finally {
        await file.close();
    }
    for (const key of Object.keys(layout).sort()) hash.update(`${key}=${String(layout[key])}\n`);
    return hash.digest("hex").slice(0, 32);
}

import { createHash } from "node:crypto";
import { open } from "node:fs/promises";

/** Blocks read across the file: the first (the GGUF header: metadata, tensor shapes and types), the last, and evenly between. */
const sampledBlocks = 16;
const blockBytes = 64 * 1024;

/**
 * A SHA-256 (hex) of a model file's size and 16 blocks of 64 KiB spread across it, first and
 * last included: the same for the same file wherever it lies (replicas, a copied cache), and
 * different for another model, quantization or fine-tune. It reads about 1 MiB, so it costs
 * nothing next to loading the weights, where hashing a 6 GB file whole would take seconds. A
 * change that keeps the size and touches none of the sampled bytes goes unseen.
 */
export async function modelFileIdentity(path: string): Promise<string> {
    const file = await open(path, "r");
    try {
        const { size } = await file.stat();
        const hash = createHash("sha256").update(`gguf-size:${size}\n`);
        const buffer = Buffer.alloc(blockBytes);
        const lastStart = Math.max(0, size - blockBytes);
        for (let block = 0; block < sampledBlocks; block += 1) {
            const position = Math.floor((lastStart * block) / (sampledBlocks - 1));
            const { bytesRead } = await file.read(buffer, 0, blockBytes, position);
            hash.update(buffer.subarray(0, bytesRead));
        }
        return hash.digest("hex");
    } finally {
        await file.close();
    }
}

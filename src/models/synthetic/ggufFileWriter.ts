import { open, type FileHandle } from "node:fs/promises";
import type { GgufLayout, PlacedTensor } from "./ggufLayout.js";

export interface WriteProgress {
    writtenBytes: number;
    totalBytes: number;
}

export interface WriteOptions {
    onProgress?: (progress: WriteProgress) => void;
    signal?: AbortSignal;
}

/**
 * Streams a GGUF file to `path` (which must not exist): header, then each tensor's chunks at its
 * offset, zero padding in between. One write is kept in flight while the next chunk is being
 * generated, so random-byte generation and disk I/O overlap; memory use stays at a few chunks.
 * The file is fsynced before returning, so a caller that renames it into place never exposes
 * a file whose data is still only in the page cache.
 */
export async function writeGgufFile(
    path: string,
    layout: GgufLayout,
    tensorData: (tensor: PlacedTensor) => Iterable<Uint8Array>,
    options: WriteOptions = {}
): Promise<void> {
    const { onProgress, signal } = options;
    signal?.throwIfAborted();
    const file = await open(path, "wx");
    let pendingWrite: Promise<unknown> = Promise.resolve();
    try {
        let position = 0;
        const write = async (bytes: Uint8Array): Promise<void> => {
            await pendingWrite;
            signal?.throwIfAborted();
            if (bytes.length === 0) return;
            const at = position;
            position += bytes.length;
            pendingWrite = writeFully(file, bytes, at).then(() => {
                onProgress?.({ writtenBytes: at + bytes.length, totalBytes: layout.totalBytes });
            });
            // a failure surfaces at the next await of pendingWrite; never as an unhandled rejection
            pendingWrite.catch(() => undefined);
        };

        await write(layout.header);
        const dataStart = layout.header.length;
        for (const tensor of layout.tensors) {
            await write(new Uint8Array(dataStart + tensor.offset - position)); // alignment padding
            let produced = 0;
            for (const chunk of tensorData(tensor)) {
                produced += chunk.length;
                await write(chunk);
            }
            if (produced !== tensor.bytes) {
                throw new Error(`tensor ${tensor.plan.name}: produced ${produced} bytes, expected ${tensor.bytes}`);
            }
        }
        await write(new Uint8Array(layout.totalBytes - position));
        await pendingWrite;
        await file.sync();
    } finally {
        // never close the descriptor under a write still in flight (e.g. after a throw)
        await pendingWrite.catch(() => undefined);
        await file.close();
    }
}

/** pwrite may write less than asked; loop until every byte is out. */
async function writeFully(file: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
    let written = 0;
    while (written < bytes.length) {
        const { bytesWritten } = await file.write(bytes, written, bytes.length - written, position + written);
        if (bytesWritten === 0) throw new Error(`no progress writing at byte ${position + written}`);
        written += bytesWritten;
    }
}

import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";

/** The sha256 of a file as lowercase hex, read in a stream with progress (6 GB takes a while). */
export async function sha256OfFile(path: string, options: { onProgress?: (done: number, total: number) => void; signal?: AbortSignal } = {}): Promise<string> {
    const { size } = await stat(path);
    const hash = createHash("sha256");
    let done = 0;
    for await (const chunk of createReadStream(path, { highWaterMark: 4 << 20, signal: options.signal })) {
        hash.update(chunk as Buffer);
        done += (chunk as Buffer).length;
        options.onProgress?.(done, size);
    }
    return hash.digest("hex");
}

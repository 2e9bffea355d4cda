import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

/** ipull 3.9.5's ChunkStatus.COMPLETE in the chunk map it saves. */
const chunkComplete = 2;

/**
 * How many chunks the chunk map in `dir`'s partial download (`*.ipull`) records as complete, or
 * undefined while there is no such file or no whole map in it yet. ipull writes the map as JSON
 * after the file's `fileSize` bytes, asynchronously after each chunk: a resume reads this map, so
 * a test waits for it before interrupting a download.
 */
export async function completeChunksSaved(dir: string, fileSize: number): Promise<number | undefined> {
    const names = await readdir(dir).catch(() => [] as string[]);
    const partial = names.find((name) => name.endsWith(".ipull"));
    if (partial === undefined) return undefined;
    const bytes = await readFile(join(dir, partial));
    if (bytes.length <= fileSize) return undefined;
    try {
        const map = JSON.parse(bytes.subarray(fileSize).toString("utf8")) as { chunks?: unknown };
        return Array.isArray(map.chunks) ? map.chunks.filter((status) => status === chunkComplete).length : undefined;
    } catch {
        // Read while ipull was writing it: the next poll sees the whole map.
        return undefined;
    }
}

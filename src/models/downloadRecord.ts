/**
 * A small JSON file beside each downloaded model (`<file>.maple.json`) saying which spec it came
 * from and what was checked: node-llama-cpp's file names drop the repository, so without it
 * `maple models` could not say what a file is, and a file whose sha256 was once verified would
 * have to be hashed again on every start.
 */
import { readFile, rename, unlink, writeFile } from "node:fs/promises";

export interface DownloadRecord {
    spec: string;
    /** The size the hub announced, once known. */
    bytes?: number;
    /** Set once the file's sha256 was computed and matched the known one. */
    verifiedSha256?: string;
}

export const recordSuffix = ".maple.json";

export function recordPathFor(modelPath: string): string {
    return modelPath + recordSuffix;
}

export async function readDownloadRecord(modelPath: string): Promise<DownloadRecord | undefined> {
    try {
        const parsed = JSON.parse(await readFile(recordPathFor(modelPath), "utf8")) as Partial<DownloadRecord>;
        return typeof parsed.spec === "string" ? (parsed as DownloadRecord) : undefined;
    } catch {
        return undefined;
    }
}

/** Atomic (temp file and rename), so a reader never sees half a record. */
export async function writeDownloadRecord(modelPath: string, record: DownloadRecord): Promise<void> {
    const path = recordPathFor(modelPath);
    const temp = `${path}.tmp-${process.pid}`;
    await writeFile(temp, JSON.stringify(record) + "\n");
    await rename(temp, path).catch(async (error: unknown) => {
        await unlink(temp).catch(() => undefined);
        throw error;
    });
}

import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, readdir, readFile, rename, stat, writeFile, rm } from "node:fs/promises";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { z } from "zod";

/** Bumped when the manifest or the way states are written changes: older entries are then ignored. */
const manifestFormat = 1;

const manifestSchema = z.object({
    format: z.literal(manifestFormat),
    identity: z.string(),
    tokens: z.array(z.number().int().nonnegative()),
    bytes: z.number().int().positive(),
    crc32: z.number().int().nonnegative(),
    key: z.string().optional(),
    savedAt: z.number(),
    /** A shared preamble's state (see SlotCachePolicy.savePreamble), not a conversation's. */
    preamble: z.boolean().optional()
});

export type DiskManifest = z.infer<typeof manifestSchema>;

export interface DiskEntryFiles {
    state: string;
    manifest: string;
}

export function diskEntryFiles(dir: string, id: string): DiskEntryFiles {
    return { state: join(dir, `${id}.state`), manifest: join(dir, `${id}.json`) };
}

/**
 * Files are read in 1 MiB chunks: a state is tens of MB and is never held whole, and each chunk
 * is one job on libuv's pool, which Maple shares with llama.cpp's decode calls
 * (UV_THREADPOOL_SIZE=1): a single whole-file copy would hold decoding up for its duration.
 */
const chunkBytes = 1 << 20;

/** The CRC-32 of a file. */
export async function fileChecksum(file: string): Promise<number> {
    let checksum = 0;
    for await (const chunk of createReadStream(file, { highWaterMark: chunkBytes })) checksum = crc32(chunk as Buffer, checksum);
    return checksum;
}

/** Copies a file chunk by chunk and returns the copy's CRC-32. */
async function copyWithChecksum(source: string, target: string): Promise<number> {
    let checksum = 0;
    const summing = new Transform({
        transform(chunk: Buffer, _encoding, done) {
            checksum = crc32(chunk, checksum);
            done(null, chunk);
        }
    });
    await pipeline(createReadStream(source, { highWaterMark: chunkBytes }), summing, createWriteStream(target));
    return checksum;
}

/**
 * Copies a saved state into the disk tier with its manifest (identity, tokens, size, checksum).
 * Both are written under temporary names and renamed, the manifest last: a crash leaves either
 * no entry or a complete one.
 */
export async function writeDiskEntry(source: string, files: DiskEntryFiles, manifest: Omit<DiskManifest, "format" | "crc32">): Promise<void> {
    const stateTemp = `${files.state}.partial`;
    const manifestTemp = `${files.manifest}.partial`;
    try {
        const checksum = await copyWithChecksum(source, stateTemp);
        const { size } = await stat(stateTemp);
        if (size !== manifest.bytes) throw new Error(`copied ${size} of ${manifest.bytes} bytes`);
        const full: DiskManifest = { format: manifestFormat, ...manifest, crc32: checksum };
        await writeFile(manifestTemp, JSON.stringify(full));
        await rename(stateTemp, files.state);
        await rename(manifestTemp, files.manifest);
    } catch (error) {
        await Promise.all([rm(stateTemp, { force: true }), rm(manifestTemp, { force: true })]);
        throw error;
    }
}

export interface FoundDiskEntry {
    id: string;
    files: DiskEntryFiles;
    manifest: DiskManifest;
}

/**
 * The entries in `dir` whose manifest parses, names this identity, and whose state file has the
 * size it records. Anything else (another model's entry, a half-written or corrupted one) is
 * skipped and left alone; checksums are checked when an entry is restored.
 */
export async function readDiskEntries(dir: string, identity: string, maxTokens: number): Promise<{ found: FoundDiskEntry[]; ignored: number }> {
    await mkdir(dir, { recursive: true });
    const found: FoundDiskEntry[] = [];
    let ignored = 0;
    for (const name of await readdir(dir)) {
        if (!name.endsWith(".json")) continue;
        const id = name.slice(0, -".json".length);
        const files = diskEntryFiles(dir, id);
        try {
            const manifest = manifestSchema.parse(JSON.parse(await readFile(files.manifest, "utf8")));
            if (manifest.identity !== identity) throw new Error("another model's entry");
            if (manifest.tokens.length === 0 || manifest.tokens.length >= maxTokens) throw new Error("does not fit the context");
            if ((await stat(files.state)).size !== manifest.bytes) throw new Error("state file of the wrong size");
            found.push({ id, files, manifest });
        } catch {
            ignored += 1;
        }
    }
    return { found, ignored };
}

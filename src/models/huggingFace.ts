/**
 * Maple's view of Hugging Face models: which model specs name one, where they are stored, and
 * what a downloaded file must be before it is served (its announced size; for deepgrove's
 * official files their known size and sha256). The transfer itself is in the engine's
 * `downloadModel`.
 */
import { mkdir, readdir, stat, statfs, unlink } from "node:fs/promises";
import path from "node:path";
import { downloadModel, findDownloadedModel, partialDownloadSuffix, type DownloadProgress } from "../engine/modelDownload.js";
import { readDownloadRecord, recordPathFor, writeDownloadRecord } from "./downloadRecord.js";
import { sha256OfFile } from "./fileIntegrity.js";
import { huggingFaceFileUrl, probeHubFile } from "./hubProbe.js";
import { ModelSpecError } from "./modelSpecError.js";
import { officialFiles, type KnownFile, type KnownFiles } from "./officialModels.js";

export { defaultModelSpec } from "./officialModels.js";

/** Model spec prefixes that name a Hugging Face file (the same ones node-llama-cpp accepts). */
const huggingFacePrefixes = ["hf:", "huggingface:"];

/**
 * True for `hf:owner/repo/file.gguf`, `hf:owner/repo:quant` (also `hf://…`, `huggingface:…`).
 * Case-sensitive like node-llama-cpp; says nothing about whether the repository exists.
 */
export function isHuggingFaceSpec(spec: string): boolean {
    return huggingFacePrefixes.some((prefix) => spec.startsWith(prefix) && spec.length > prefix.length);
}

/** `${modelsDir}/hf`: where downloads go. */
export function huggingFaceDir(modelsDir: string): string {
    return path.join(modelsDir, "hf");
}

export interface ResolveHuggingFaceOptions {
    /** Called as bytes arrive; a resumed download starts from the bytes already on disk. */
    onProgress?: (progress: DownloadProgress) => void;
    /** Progress of the sha256 check of a known file, in bytes. */
    onVerifyProgress?: (done: number, total: number) => void;
    /** Aborting keeps a partial download, so the next call resumes it. */
    signal?: AbortSignal;
    /** Sizes and hashes to enforce, by spec; default: deepgrove's official files. */
    knownFiles?: KnownFiles;
}

/**
 * The local path of a Hugging Face model, downloading it into `${modelsDir}/hf/` first unless a
 * complete copy is already there (then no network is used). An interrupted download is resumed
 * by the next call. A file is only returned once it is whole: the size the hub announced (and,
 * for a known file, its known size and sha256, hashed once and remembered). Throws
 * HubUnreachableError when the hub cannot be reached, ModelSpecError for everything the user
 * must act on (404, 401/403, a size or checksum mismatch, a full disk), a TypeError for specs
 * that `isHuggingFaceSpec` rejects.
 */
export async function resolveHuggingFaceModel(spec: string, modelsDir: string, options: ResolveHuggingFaceOptions = {}): Promise<string> {
    if (!isHuggingFaceSpec(spec)) {
        throw new TypeError(`Not a Hugging Face model spec: "${spec}" (expected hf:owner/repo/file.gguf or hf:owner/repo:quant)`);
    }
    const dir = huggingFaceDir(modelsDir);
    const known = (options.knownFiles ?? officialFiles)[spec];
    const existing = await findDownloadedModel(spec, dir);
    if (existing !== undefined) {
        await checkDownloadedFile(spec, existing, known, undefined, options);
        return existing;
    }

    const url = huggingFaceFileUrl(spec);
    let announced: number | undefined;
    if (url !== undefined) {
        announced = (await probeHubFile(spec, url, options.signal)).bytes;
        if (known !== undefined && announced !== undefined && announced !== known.bytes) {
            throw new ModelSpecError(`Refusing ${spec}: the hub announces ${announced} bytes, but the official file is ${known.bytes} bytes`);
        }
        await mkdir(dir, { recursive: true });
        await checkFreeSpace(spec, dir, announced ?? known?.bytes);
    }
    let modelPath: string;
    try {
        modelPath = await downloadModel(spec, dir, {
            signal: options.signal,
            onProgress: (progress) => {
                announced ??= progress.totalBytes > 0 ? progress.totalBytes : undefined;
                options.onProgress?.(progress);
            }
        });
    } catch (error) {
        options.signal?.throwIfAborted();
        throw new ModelSpecError((error as Error).message, { cause: error });
    }
    await checkDownloadedFile(spec, modelPath, known, announced, options);
    return modelPath;
}

/**
 * Refuses (and deletes) a file that is not what it should be: not the announced or known size, or
 * a known sha256 that does not match. The sha256 is computed once; the record beside the file
 * remembers it.
 */
async function checkDownloadedFile(spec: string, modelPath: string, known: KnownFile | undefined, announced: number | undefined,
    options: ResolveHuggingFaceOptions): Promise<void> {
    const { size } = await stat(modelPath);
    const record = await readDownloadRecord(modelPath);
    const expected = known?.bytes ?? announced ?? record?.bytes;
    if (expected !== undefined && size !== expected) {
        await removeDownload(modelPath);
        throw new ModelSpecError(`Refusing ${spec}: the file is ${size} bytes, expected ${expected}; it was deleted, run 'maple pull ${spec}' to fetch it again`);
    }
    let verifiedSha256 = record?.verifiedSha256;
    if (known?.sha256 !== undefined && verifiedSha256 !== known.sha256) {
        const actual = await sha256OfFile(modelPath, { onProgress: options.onVerifyProgress, signal: options.signal });
        if (actual !== known.sha256) {
            await removeDownload(modelPath);
            throw new ModelSpecError(`Refusing ${spec}: its sha256 is ${actual}, expected ${known.sha256}; the file was deleted, run 'maple pull ${spec}' to fetch it again`);
        }
        verifiedSha256 = actual;
    }
    if (record?.spec !== spec || record.bytes !== size || record.verifiedSha256 !== verifiedSha256) {
        await writeDownloadRecord(modelPath, { spec, bytes: size, ...(verifiedSha256 === undefined ? {} : { verifiedSha256 }) });
    }
}

async function removeDownload(modelPath: string): Promise<void> {
    await unlink(modelPath).catch(() => undefined);
    await unlink(recordPathFor(modelPath)).catch(() => undefined);
}

/** Fails before the transfer when the disk cannot hold the file (ENOSPC midway would waste the time). */
async function checkFreeSpace(spec: string, dir: string, bytes: number | undefined): Promise<void> {
    if (bytes === undefined) return;
    const { bavail, bsize } = await statfs(dir);
    const free = bavail * bsize;
    // a partial download being resumed already holds part of the bytes
    let partial = 0;
    for (const name of await readdir(dir)) {
        if (name.endsWith(partialDownloadSuffix)) partial += (await stat(path.join(dir, name)).catch(() => ({ size: 0 }))).size;
    }
    if (free + partial < bytes) {
        throw new ModelSpecError(`Not enough disk space for ${spec}: it needs ${gigabytes(bytes)} GB, ${dir} has ${gigabytes(free)} GB free`);
    }
}

function gigabytes(bytes: number): string {
    return (bytes / 1e9).toFixed(2);
}

import { open } from "node:fs/promises";
import { resolve } from "node:path";
import { defaultModelSpec, isHuggingFaceSpec, resolveHuggingFaceModel } from "./huggingFace.js";
import { ensureSyntheticModel } from "./synthetic/index.js";

export const syntheticPrefix = "synthetic:";
/** Served when the default model cannot be fetched (offline): the whole stack still runs. */
export const offlineFallbackSpec = "synthetic:maple-tiny";

export interface ResolvedModel {
    /** Local GGUF file to load. */
    path: string;
    /** What the user asked for (or the default), as /health reports it in `model_path`. */
    source: string;
    kind: "file" | "huggingface" | "synthetic";
}

export interface ResolveModelOptions {
    modelsDir: string;
    /** Progress of a download or a synthetic model write, in bytes. */
    onProgress?: (work: "download" | "write", done: number, total: number) => void;
    /** Told when the default model cannot be fetched and the offline fallback is served. */
    onFallback?: (reason: string) => void;
    signal?: AbortSignal;
}

/** Thrown for a model that cannot be found or is not a GGUF file; the CLI prints it as one line. */
export class ModelSpecError extends Error {
    constructor(message: string, options?: { cause?: unknown }) {
        super(message, options);
        this.name = "ModelSpecError";
    }
}

/**
 * Turns a model spec into a local GGUF file: a path as it is, an `hf:` reference downloaded once
 * into the models directory, `synthetic:NAME` written once. With no spec, deepgrove's
 * maple-preview, falling back to synthetic:maple-tiny when it cannot be fetched.
 */
export async function resolveModel(spec: string | undefined, options: ResolveModelOptions): Promise<ResolvedModel> {
    if (spec === undefined) {
        try {
            return await resolveModel(defaultModelSpec, options);
        } catch (error) {
            if (options.signal?.aborted) throw error;
            options.onFallback?.(`${defaultModelSpec} could not be fetched (${(error as Error).message}); serving ${offlineFallbackSpec} instead`);
            return resolveModel(offlineFallbackSpec, options);
        }
    }
    if (spec.startsWith(syntheticPrefix)) {
        const name = spec.slice(syntheticPrefix.length);
        const path = await ensureSyntheticModel(name, options.modelsDir, {
            onProgress: (progress) => options.onProgress?.("write", progress.writtenBytes, progress.totalBytes),
            signal: options.signal
        });
        return { path, source: spec, kind: "synthetic" };
    }
    if (isHuggingFaceSpec(spec)) {
        const path = await resolveHuggingFaceModel(spec, options.modelsDir, {
            onProgress: (progress) => options.onProgress?.("download", progress.downloadedBytes, progress.totalBytes),
            signal: options.signal
        });
        return { path, source: spec, kind: "huggingface" };
    }
    const path = resolve(spec);
    await assertGgufFile(path);
    return { path, source: path, kind: "file" };
}

const ggufMagic = "GGUF";
/** Magic, version, tensor count and metadata count: a GGUF file is at least this long. */
const ggufHeaderBytes = 4 + 4 + 8 + 8;

/** Fails early, with a message naming the file, on a missing, unreadable, truncated or non-GGUF file. */
export async function assertGgufFile(path: string): Promise<void> {
    let handle;
    try {
        handle = await open(path, "r");
    } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a directory" : code ?? (error as Error).message;
        throw new ModelSpecError(`Cannot open model file ${path}: ${why}`, { cause: error });
    }
    try {
        const header = Buffer.alloc(ggufHeaderBytes);
        const { bytesRead } = await handle.read(header, 0, ggufHeaderBytes, 0);
        if (bytesRead < 4 || header.toString("latin1", 0, 4) !== ggufMagic) {
            throw new ModelSpecError(`${path} is not a GGUF model file (it does not start with the GGUF magic bytes)`);
        }
        if (bytesRead < ggufHeaderBytes) throw new ModelSpecError(`${path} is truncated: shorter than a GGUF header`);
    } catch (error) {
        if (error instanceof ModelSpecError) throw error;
        throw new ModelSpecError(`Cannot read model file ${path}: ${(error as Error).message}`, { cause: error });
    } finally {
        await handle.close();
    }
}

import { open } from "node:fs/promises";
import { resolve } from "node:path";
import { defaultModelSpec, isHuggingFaceSpec, resolveHuggingFaceModel } from "./huggingFace.js";
import { HubUnreachableError, ModelSpecError } from "./modelSpecError.js";
import { expandShortName, type KnownFiles } from "./officialModels.js";
import { ensureSyntheticModel } from "./synthetic/index.js";

export { HubUnreachableError, ModelSpecError } from "./modelSpecError.js";

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

/** Work before a model can load: a download, the sha256 check of a known file, a synthetic model write. */
export type ResolveWork = "download" | "verify" | "write";

export interface ResolveModelOptions {
    modelsDir: string;
    /** Progress of a download, a checksum or a synthetic model write, in bytes. */
    onProgress?: (work: ResolveWork, done: number, total: number) => void;
    /** Told when the default model's hub is unreachable and the offline fallback is served. */
    onFallback?: (reason: string) => void;
    signal?: AbortSignal;
    /** Sizes and hashes downloads must match; default: deepgrove's official files. */
    knownFiles?: KnownFiles;
}

/**
 * Turns a model spec into a local GGUF file: a short name (`maple-preview`, `maple-preview:tq1`)
 * as the hf: file it stands for, an `hf:` reference downloaded once into the models directory,
 * `synthetic:NAME` written once, anything else as a path. With no spec, deepgrove's
 * maple-preview; only when its hub cannot be reached at all (and it is not downloaded yet) is
 * synthetic:maple-tiny served instead. Every other failure (404, 401/403, a size or checksum
 * mismatch, a full disk) is thrown: never random weights in place of a model that was refused.
 */
export async function resolveModel(spec: string | undefined, options: ResolveModelOptions): Promise<ResolvedModel> {
    if (spec === undefined) {
        try {
            return await resolveModel(defaultModelSpec, options);
        } catch (error) {
            if (!(error instanceof HubUnreachableError) || options.signal?.aborted) throw error;
            options.onFallback?.(offlineFallbackWarning(error));
            return resolveModel(offlineFallbackSpec, options);
        }
    }
    if (spec.startsWith(syntheticPrefix)) {
        const name = spec.slice(syntheticPrefix.length);
        const path = await ensureSyntheticModel(name, options.modelsDir, {
            onProgress: (progress) => options.onProgress?.("write", progress.writtenBytes, progress.totalBytes),
            signal: options.signal
        }).catch((error: unknown) => {
            throw options.signal?.aborted || !(error instanceof Error) ? error : new ModelSpecError(error.message, { cause: error });
        });
        return { path, source: spec, kind: "synthetic" };
    }
    const huggingFaceSpec = isHuggingFaceSpec(spec) ? spec : expandShortName(spec);
    if (huggingFaceSpec !== undefined) {
        const path = await resolveHuggingFaceModel(huggingFaceSpec, options.modelsDir, {
            onProgress: (progress) => options.onProgress?.("download", progress.downloadedBytes, progress.totalBytes),
            onVerifyProgress: (done, total) => options.onProgress?.("verify", done, total),
            signal: options.signal,
            knownFiles: options.knownFiles
        });
        return { path, source: spec, kind: "huggingface" };
    }
    const path = resolve(spec);
    await assertGgufFile(path);
    return { path, source: path, kind: "file" };
}

/** The fallback's warning: plain about what is served and what its answers are worth. */
function offlineFallbackWarning(error: Error): string {
    return `${error.message}. Serving ${offlineFallbackSpec} instead: RANDOM WEIGHTS, its answers are meaningless `
        + "(/health says \"synthetic\": true). Once online, restart, or fetch the model first with 'maple pull maple-preview'.";
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

/**
 * Model downloads, through node-llama-cpp's `resolveModelFile` (ipull underneath). Besides the
 * engine, this is the only module that touches node-llama-cpp's downloader.
 *
 * How node-llama-cpp 3.22.1 behaves, as read from its dist/ (and relied on here):
 * - Endpoint: `hf:` URIs resolve against `resolveHuggingFaceEndpoint()`
 *   (dist/utils/modelDownloadEndpoints.js), which reads `process.env.MODEL_ENDPOINT`, then
 *   `process.env.HF_ENDPOINT`, then falls back to https://huggingface.co/, on every call, so the
 *   variables may be set or changed at run time, after import.
 * - Token: `HF_TOKEN`, else the file at `HF_TOKEN_PATH` (default `$HF_HOME/token`, or
 *   `${XDG_CACHE_HOME:-~/.cache}/huggingface/token`), also read on every call
 *   (dist/utils/modelFileAccessTokens.js).
 *   It is only a fallback: the first request goes out without it and the
 *   `Authorization: Bearer` header is added after a 4xx (for `:quant` manifests, after a 401).
 *   It is only sent to Hugging Face hosts (huggingface.co, hf.co, or the configured endpoint).
 * - Layout: a file downloads into `<final name>.ipull`, with ipull's progress (done chunks of
 *   5 MiB) appended as JSON after the data, and is renamed to its final name only once complete
 *   (ipull dist/download/download-engine/engine/download-engine-nodejs.js). A final-named file
 *   is therefore always complete, and a leftover `.ipull` file is resumed by the next download
 *   of the same file with `Range` requests for the chunks not yet done (a chunk cut off midway
 *   is fetched again whole).
 * - Reuse: for `hf:` URIs the expected file names are computed locally
 *   (dist/utils/resolveModelFile.js, dist/utils/parseModelUri.js), so an already downloaded file
 *   is returned without any network request.
 */
import { access } from "node:fs/promises";
import { resolveModelFile } from "node-llama-cpp";

export interface DownloadProgress {
    downloadedBytes: number;
    /** 0 while the size is not known yet. */
    totalBytes: number;
}

export interface DownloadModelOptions {
    /** Called as bytes arrive; a resumed download starts from the bytes already on disk. */
    onProgress?: (progress: DownloadProgress) => void;
    /** Aborting keeps the partial file, so the next call resumes it. */
    signal?: AbortSignal;
}

/** ipull's suffix for a download in progress (the data, then its chunk map); renamed away when complete. */
export const partialDownloadSuffix = ".ipull";

const supportedUriPattern = /^(hf:|huggingface:|https?:\/\/)/i;
/** filenamify's default limit: ipull passes every file name through filenamify before writing. */
const maxFileNameLength = 100;

/**
 * Downloads a model URI (`hf:owner/repo/file.gguf`, `hf:owner/repo:quant`, or https URL) into
 * dir once; returns the local .gguf path. Reuses a complete file without network. Resumes a
 * partial one.
 *
 * - `hf:` files are named like node-llama-cpp names them, e.g. `hf_owner_file.gguf`;
 *   `hf:owner/repo:Q4_K_M` becomes `hf_owner_repo.Q4_K_M.gguf` (resolving it asks the
 *   `/v2/{owner}/{repo}/manifests/{quant}` endpoint, but only when the file is not there yet).
 * - https URLs are named after the last segment of their path, so two URLs that end in the same
 *   file name share one file in `dir`.
 * - `dir` is created when missing. No progress is printed: pass `onProgress` to show some.
 * - Rejects with `signal.reason` when aborted, and otherwise with an error naming `uri` (the
 *   original error is its `cause`).
 */
export async function downloadModel(uri: string, dir: string, options: DownloadModelOptions = {}): Promise<string> {
    const { onProgress, signal } = options;
    if (!supportedUriPattern.test(uri)) {
        // Without this check node-llama-cpp would treat a mistyped URI as a local path.
        throw new Error(`Unsupported model URI "${uri}": expected hf:owner/repo/file.gguf, hf:owner/repo:quant or an https URL`);
    }
    signal?.throwIfAborted();

    let modelPath: string;
    try {
        modelPath = await untilAborted(signal, resolveModelFile(uri, {
            directory: dir,
            fileName: fileNameForUrl(uri),
            cli: false,
            // The default (true) deletes the partial file on abort, which would make every retry start over.
            deleteTempFileOnCancel: false,
            signal,
            onProgress: onProgress && ((status) => {
                onProgress({ downloadedBytes: status.downloadedSize, totalBytes: status.totalSize });
            })
        }));
    } catch (error) {
        signal?.throwIfAborted();
        throw describeDownloadError(uri, error);
    }
    // node-llama-cpp can resolve quietly when cancelled mid-transfer; never return a path to a partial file.
    signal?.throwIfAborted();
    try {
        await access(modelPath);
    } catch (error) {
        throw new Error(`Download of model "${uri}" ended without a file at ${modelPath}`, { cause: error });
    }
    return modelPath;
}

/**
 * `work`, or a rejection with `signal.reason` as soon as the signal aborts. node-llama-cpp's
 * downloader stops on the signal as a rule, but a server closed mid-download waits for the load to
 * settle, and one CI run hung there (the test that closes a server while the hub stalls a part):
 * shutting down must not depend on the downloader noticing.
 */
function untilAborted<T>(signal: AbortSignal | undefined, work: Promise<T>): Promise<T> {
    if (signal === undefined) return work;
    let onAbort = (): void => undefined;
    const aborted = new Promise<never>((_, reject) => {
        onAbort = () => reject(signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
    });
    return Promise.race([work, aborted]).finally(() => signal.removeEventListener("abort", onAbort));
}

/**
 * The local path of an already complete download of `uri` in `dir`, or undefined; never touches
 * the network (node-llama-cpp computes `hf:` file names locally, `:quant` ones included).
 */
export async function findDownloadedModel(uri: string, dir: string): Promise<string | undefined> {
    if (!supportedUriPattern.test(uri)) return undefined;
    try {
        return await resolveModelFile(uri, { directory: dir, fileName: fileNameForUrl(uri), download: false, cli: false });
    } catch {
        return undefined;
    }
}

/**
 * A stable local name for an http(s) URL, so that a finished download is found again without
 * asking the server (node-llama-cpp only does that by itself for `hf:` URIs). Undefined for
 * `hf:` URIs, and for split or part files, which node-llama-cpp names and joins itself.
 */
function fileNameForUrl(uri: string): string | undefined {
    if (!/^https?:\/\//i.test(uri)) return undefined;
    const lastSegment = new URL(uri).pathname.split("/").pop() ?? "";
    let name: string;
    try {
        name = decodeURIComponent(lastSegment);
    } catch {
        name = lastSegment;
    }
    if (!name.toLowerCase().endsWith(".gguf") || /-\d{5}-of-\d{5}\.gguf$/i.test(name)) return undefined;
    // Only characters that filenamify leaves alone, so the name we look for is the name ipull writes.
    const safeName = name.replace(/[^A-Za-z0-9._-]/g, "_");
    if (safeName.length <= maxFileNameLength) return safeName;
    return safeName.slice(0, maxFileNameLength - ".gguf".length) + ".gguf";
}

function describeDownloadError(uri: string, error: unknown): Error {
    if ((error as NodeJS.ErrnoException | undefined)?.code === "ENOSPC") {
        return new Error(`Failed to download model "${uri}": the disk is full (ENOSPC); the partial download is kept, free some space and retry to resume`, { cause: error });
    }
    if (isHttpStatusError(error)) {
        const reason = error.statusCode === 404 ? "not found" : "the server refused it";
        const status = `${error.statusCode} ${typeof error.statusText === "string" ? error.statusText : ""}`.trim();
        return new Error(
            `Failed to download model "${uri}": ${reason} (HTTP ${status} from ${error.url})`,
            { cause: error }
        );
    }
    const message = error instanceof Error ? error.message : String(error);
    return new Error(`Failed to download model "${uri}": ${message}`, { cause: error });
}

/** ipull's StatusCodeError, which is not exported; recognised by its fields. */
function isHttpStatusError(error: unknown): error is { statusCode: number; statusText?: unknown; url: string } {
    if (typeof error !== "object" || error === null) return false;
    const fields = error as Record<string, unknown>;
    return typeof fields.statusCode === "number" && typeof fields.url === "string";
}

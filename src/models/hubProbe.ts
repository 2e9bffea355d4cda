/**
 * One HEAD request to the Hugging Face file a spec names, before any download: it tells an
 * unreachable hub (fall back when offline) from one that refuses (never fall back), and gives the
 * size the hub announces. node-llama-cpp's downloader cannot tell these apart: against a refused
 * connection it retries without end.
 */
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { HubUnreachableError, ModelSpecError } from "./modelSpecError.js";

/** Long enough for a slow link's TLS handshake and the hub's redirect; short enough to fall back promptly offline. */
const probeTimeoutMs = 15_000;

export interface HubFile {
    url: string;
    /** What the hub announces (Content-Length of the final response); undefined if it says nothing. */
    bytes: number | undefined;
}

/**
 * The download URL of `hf:owner/repo/path/file.gguf` (also `huggingface:`), against the endpoint
 * node-llama-cpp uses: MODEL_ENDPOINT, else HF_ENDPOINT, else https://huggingface.co/. Undefined
 * for other specs (`hf:owner/repo:quant` resolves through a manifest instead).
 */
export function huggingFaceFileUrl(spec: string): string | undefined {
    const match = /^(?:hf|huggingface):(?:\/\/)?([^/:]+)\/([^/:]+)\/([^:#]+\.gguf)$/i.exec(spec);
    if (match === null) return undefined;
    const [, owner, repo, file] = match as unknown as [string, string, string, string];
    const endpoint = process.env.MODEL_ENDPOINT || process.env.HF_ENDPOINT || "https://huggingface.co/";
    const base = endpoint.endsWith("/") ? endpoint : `${endpoint}/`;
    return `${base}${owner}/${repo}/resolve/main/${file.split("/").map(encodeURIComponent).join("/")}`;
}

/**
 * Asks the hub for the file: its size, or a one-line error. Throws HubUnreachableError when no
 * answer comes (DNS, connection, timeout); ModelSpecError for 401/403 (with a hint about
 * HF_TOKEN), 404 and any other non-success status.
 */
export async function probeHubFile(spec: string, url: string, signal?: AbortSignal): Promise<HubFile> {
    const token = await huggingFaceToken();
    const timeout = AbortSignal.timeout(probeTimeoutMs);
    let response: Response;
    try {
        response = await fetch(url, {
            method: "HEAD",
            redirect: "follow",
            headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
            signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout])
        });
    } catch (error) {
        signal?.throwIfAborted();
        const reason = timeout.aborted ? `no answer within ${probeTimeoutMs / 1000} s` : networkReason(error);
        throw new HubUnreachableError(`Cannot reach ${new URL(url).origin} for ${spec}: ${reason}`, { cause: error });
    }
    const status = `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`;
    if (response.status === 401 || response.status === 403) {
        throw new ModelSpecError(`Access to ${spec} was refused (${status} from ${url}): a gated or private repository needs a token in HF_TOKEN with access to it`);
    }
    if (response.status === 404) throw new ModelSpecError(`${spec} was not found (${status} from ${url})`);
    if (!response.ok) throw new ModelSpecError(`The hub failed to serve ${spec} (${status} from ${url})`);
    const length = Number(response.headers.get("content-length") ?? "");
    return { url, bytes: Number.isSafeInteger(length) && length > 0 ? length : undefined };
}

/** undici reports "fetch failed" with the socket error as its cause: name the error code. */
function networkReason(error: unknown): string {
    let current: unknown = error;
    let deepest = error instanceof Error ? error.message : String(error);
    while (current instanceof Error) {
        const code = (current as NodeJS.ErrnoException).code;
        if (typeof code === "string") return `${code} (${current.message})`;
        deepest = current.message;
        current = current.cause;
    }
    return deepest;
}

/** The token node-llama-cpp would use: HF_TOKEN, else the file at HF_TOKEN_PATH or $HF_HOME/token. */
async function huggingFaceToken(): Promise<string | undefined> {
    if (process.env.HF_TOKEN) return process.env.HF_TOKEN;
    const home = process.env.HF_HOME || join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "huggingface");
    const path = process.env.HF_TOKEN_PATH || join(home, "token");
    const token = await readFile(path, "utf8").then((text) => text.trim(), () => "");
    return token === "" ? undefined : token;
}

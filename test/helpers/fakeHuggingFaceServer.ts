/**
 * A local stand-in for the Hugging Face endpoints node-llama-cpp 3.22.1 calls, so download code
 * can be tested without network. Point `HF_ENDPOINT` at `endpoint`.
 *
 * - `GET|HEAD /{owner}/{repo}/resolve/main/{file}`: the file, with `Accept-Ranges: bytes` and
 *   single `Range: bytes=a-b` support (ipull first asks with a plain GET it never reads, then
 *   fetches 5 MiB chunks with ranged GETs).
 * - `GET /v2/{owner}/{repo}/manifests/{quant}`: what `hf:owner/repo:quant` resolves through;
 *   answers `{ggufFile: {rfilename}}`.
 * Anything else is a 404, unless `statuses` gives a path another answer (401, 403, 500…).
 * `officialFiles()` names deepgrove's maple-preview files as the real repository does.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { join } from "node:path";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
    method: string;
    path: string;
    /** The requested byte range, end exclusive; undefined without a Range header. */
    range: { start: number; end: number } | undefined;
    /** True once the whole body was handed to the socket. */
    completed: boolean;
    /** True while the body is paused at the hold offset. */
    held: boolean;
}

export interface FakeHuggingFaceServerOptions {
    /** File contents by repository path, e.g. "owner/repo/model.gguf" (served from branch main). */
    files: Record<string, Buffer>;
    /** Quantization manifests: "owner/repo:Q4_K_M" → the file's name inside the repository. */
    manifests?: Record<string, string>;
    /** Fixed status codes by repository path (as in `files`), answered with an empty JSON error. */
    statuses?: Record<string, number>;
}

/** deepgrove's repository and its two official files, as `files` keys. */
export const officialRepository = "deepgrove/maple-preview-GGUF";
export const officialTq2File = `${officialRepository}/maple-preview-TQ2_0-head-Q4_K.gguf`;
export const officialTq1File = `${officialRepository}/maple-preview-TQ1_0-head-Q4_K.gguf`;

/** `files` entries serving stand-in bytes under the official file names. */
export function officialFiles(tq2: Buffer, tq1: Buffer = tq2): Record<string, Buffer> {
    return { [officialTq2File]: tq2, [officialTq1File]: tq1 };
}

export interface FakeHuggingFaceServer {
    /** Base URL with a trailing slash, for HF_ENDPOINT. */
    endpoint: string;
    requests: RecordedRequest[];
    /** Bodies whose range spans `offset` stop there until `release()`: an interrupted transfer. */
    holdAt(offset: number): void;
    release(): void;
    close(): Promise<void>;
}

const pieceSize = 64 * 1024;

export async function startFakeHuggingFaceServer(options: FakeHuggingFaceServerOptions): Promise<FakeHuggingFaceServer> {
    const requests: RecordedRequest[] = [];
    let hold: { offset: number; released: Promise<void>; release: () => void } | undefined;

    const server = createServer((req, res) => {
        const url = new URL(req.url ?? "/", "http://localhost");
        const record: RecordedRequest = {
            method: req.method ?? "GET",
            path: url.pathname,
            range: undefined,
            completed: false,
            held: false
        };
        requests.push(record);
        const segments = url.pathname.split("/").slice(1).map((segment) => decodeURIComponent(segment));

        const [first, owner, repo, kind, tag] = segments;
        if (first === "v2" && kind === "manifests" && segments.length === 5) {
            const fileName = options.manifests?.[`${owner}/${repo}:${tag}`];
            if (fileName === undefined) return sendJson(res, 404, { error: "Repository or quantization not found" });
            return sendJson(res, 200, { ggufFile: { rfilename: fileName } });
        }

        const [fileOwner, fileRepo, resolve, branch, ...fileParts] = segments;
        const repoPath = [fileOwner, fileRepo, ...fileParts].join("/");
        const status = resolve === "resolve" && branch === "main" ? options.statuses?.[repoPath] : undefined;
        if (status !== undefined) return sendJson(res, status, { error: `status ${status}` });
        const bytes = resolve === "resolve" && branch === "main" ? options.files[repoPath] : undefined;
        if (bytes === undefined) return sendJson(res, 404, { error: "Entry not found" });
        serveFile(req, res, record, bytes);
    });

    function serveFile(req: IncomingMessage, res: ServerResponse, record: RecordedRequest, bytes: Buffer): void {
        const headers: Record<string, string | number> = { "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream" };
        let start = 0;
        let end = bytes.length;
        const rangeMatch = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
        if (req.headers.range !== undefined) {
            if (rangeMatch === null || Number(rangeMatch[1]) >= bytes.length) {
                res.writeHead(416, { "Content-Range": `bytes */${bytes.length}` }).end();
                return;
            }
            start = Number(rangeMatch[1]);
            end = rangeMatch[2] ? Math.min(Number(rangeMatch[2]) + 1, bytes.length) : bytes.length;
            record.range = { start, end };
            headers["Content-Range"] = `bytes ${start}-${end - 1}/${bytes.length}`;
        }
        headers["Content-Length"] = end - start;
        res.writeHead(record.range ? 206 : 200, headers);
        if (req.method === "HEAD") {
            res.end();
            return;
        }
        void sendBody(res, record, bytes, start, end);
    }

    /** Writes the body in pieces, honouring backpressure and the hold offset; stops if the client goes away. */
    async function sendBody(res: ServerResponse, record: RecordedRequest, bytes: Buffer, start: number, end: number): Promise<void> {
        let closed = false;
        const closedPromise = new Promise<void>((resolve) => res.once("close", () => {
            closed = true;
            resolve();
        }));
        let offset = start;
        while (offset < end && !closed) {
            if (hold !== undefined && offset === hold.offset) {
                record.held = true;
                await Promise.race([hold.released, closedPromise]);
                record.held = false;
                continue;
            }
            let pieceEnd = Math.min(end, offset + pieceSize);
            if (hold !== undefined && offset < hold.offset && pieceEnd > hold.offset) pieceEnd = hold.offset;
            const flushed = res.write(bytes.subarray(offset, pieceEnd));
            offset = pieceEnd;
            if (!flushed) await Promise.race([new Promise((resolve) => res.once("drain", resolve)), closedPromise]);
        }
        if (closed) return;
        res.end();
        record.completed = true;
    }

    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;

    return {
        endpoint: `http://127.0.0.1:${port}/`,
        requests,
        holdAt(offset) {
            let release = () => {};
            const released = new Promise<void>((resolve) => {
                release = resolve;
            });
            hold = { offset, released, release };
        },
        release() {
            hold?.release();
            hold = undefined;
        },
        async close() {
            hold?.release();
            hold = undefined;
            // ipull leaves its first, unread GET open; without this, close() would wait for it forever.
            server.closeAllConnections();
            await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
        }
    };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) }).end(text);
}

/**
 * Points node-llama-cpp and Maple at `endpoint` (HF_ENDPOINT); clears MODEL_ENDPOINT, which
 * would win over it, and keeps a real token out of the requests. Returns a function restoring
 * the environment as it was.
 */
export function useFakeHubEnvironment(endpoint: string, tempDir: string): () => void {
    const saved = { ...process.env };
    process.env.HF_ENDPOINT = endpoint;
    delete process.env.MODEL_ENDPOINT;
    delete process.env.HF_TOKEN;
    process.env.HF_TOKEN_PATH = join(tempDir, "no-token");
    return () => {
        process.env = saved;
    };
}

/** `size` bytes that start with the GGUF magic, then deterministic filler: a stand-in for a model file. */
export function standInModelBytes(size: number, seed: number): Buffer {
    const bytes = Buffer.alloc(size);
    bytes.write("GGUF", 0, "ascii");
    for (let i = 4, state = seed; i < size; i++) {
        state = (state * 1103515245 + 12345) >>> 0;
        bytes[i] = state >>> 24;
    }
    return bytes;
}

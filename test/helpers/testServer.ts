import { join } from "node:path";
import OpenAI from "openai";
import { defaultConfig, type MapleConfig } from "../../src/config/settings.js";
import { createLogger } from "../../src/server/logger.js";
import { startServer, type RunningServer } from "../../src/server/startServer.js";

const repoRoot = new URL("../../../", import.meta.url).pathname;

/** Synthetic models are written once per machine into this cache (CI sets MAPLE_MODELS_DIR). */
export const testModelsDir = process.env.MAPLE_MODELS_DIR ?? join(repoRoot, ".maple-cache", "models");

export interface TestServer extends RunningServer {
    client: OpenAI;
    /** fetch against the server, with a path such as "/v1/completions". */
    request(path: string, init?: RequestInit): Promise<Response>;
    post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
}

/**
 * A real Maple server on a loopback port with the real engine on a synthetic model. One thread:
 * test files run one at a time, but a file may start more than one engine. On the CPU build (the
 * patched addon) whatever GPU the machine has: test/gpu/ runs a subset with `gpu: "vulkan"`.
 */
export async function startTestServer(overrides: Partial<MapleConfig> = {}, options: { waitReady?: boolean; logStream?: NodeJS.WritableStream } = {}): Promise<TestServer> {
    const config = defaultConfig({
        model: "synthetic:maple-tiny",
        host: "127.0.0.1",
        port: 0,
        modelsDir: testModelsDir,
        threads: 1,
        contextSize: 1024,
        gpu: "cpu",
        logLevel: "silent",
        ...overrides
    });
    const server = await startServer(config, { logger: createLogger(config.logLevel, options.logStream) });
    if (options.waitReady !== false) await server.ready;
    const request = (path: string, init?: RequestInit): Promise<Response> => fetch(`${server.url}${path}`, init);
    return {
        ...server,
        client: new OpenAI({ baseURL: `${server.url}/v1`, apiKey: config.apiKey ?? "unused", maxRetries: 0 }),
        request,
        post: (path, body, headers = {}) => request(path, {
            method: "POST",
            headers: { "content-type": "application/json", ...headers },
            body: typeof body === "string" ? body : JSON.stringify(body)
        })
    };
}

export interface WireError {
    error: { message: string; type: string; param: string | null; code: string | null };
}

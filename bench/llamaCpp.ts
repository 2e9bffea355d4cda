import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { repoRoot } from "./shared.js";

const run = promisify(execFile);

/**
 * llama.cpp's own llama-bench and llama-server, built once from the source node-llama-cpp ships
 * (llama/gitRelease.bundle, the same llama.cpp release) into a cache outside the repo, so both
 * sides of every comparison run the same kernels. Never committed.
 */
export async function ensureLlamaCppTools(): Promise<{ bench: string; server: string }> {
    const cacheDir = process.env.MAPLE_LLAMA_CPP_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "maple", "llama.cpp");
    const source = join(cacheDir, "src");
    const build = join(source, "build");
    const tools = { bench: join(build, "bin", "llama-bench"), server: join(build, "bin", "llama-server") };
    if (existsSync(tools.bench) && existsSync(tools.server)) return tools;
    await mkdir(cacheDir, { recursive: true });
    if (!existsSync(source)) {
        console.log(`cloning llama.cpp from node-llama-cpp's bundle into ${source}`);
        await run("git", ["clone", "-q", join(repoRoot, "node_modules", "node-llama-cpp", "llama", "gitRelease.bundle"), source]);
    }
    console.log("building llama-bench and llama-server (once; several minutes on 2 cores)");
    await run("cmake", ["-S", source, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON", "-DLLAMA_CURL=OFF",
        "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TOOLS=ON"], { maxBuffer: 1 << 26 });
    await new Promise<void>((resolve, reject) => {
        const child = spawn("cmake", ["--build", build, "-j", "2", "--target", "llama-bench", "llama-server"], { stdio: "ignore" });
        child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`llama.cpp build failed (${code})`))));
    });
    return tools;
}

export interface LlamaBenchResult {
    promptTokensPerSecond: number;
    /** Decode into an empty context: llama-bench's usual tg figure. */
    decodeTokensPerSecond: number;
    /**
     * Decode after `promptTokens` tokens already in the context, which is what a server's decode
     * after a prompt is; attention over the prompt makes it slower (maple-preview: 33.6 → 31.1 tok/s at 200).
     */
    decodeAtDepthTokensPerSecond: number;
}

/** llama-bench's pp (prompt) and tg (decode, at depth 0 and at the prompt's depth) throughput, averaged over its repetitions. */
export async function runLlamaBench(binary: string, modelPath: string, threads: number, promptTokens: number, decodeTokens: number): Promise<LlamaBenchResult> {
    const { stdout } = await run(binary, ["-m", modelPath, "-t", String(threads), "-p", String(promptTokens), "-n", String(decodeTokens),
        "-d", `0,${promptTokens}`, "-r", "3", "-o", "json"], { maxBuffer: 1 << 26 });
    const rows = JSON.parse(stdout) as { n_prompt: number; n_gen: number; n_depth?: number; avg_ts: number }[];
    const decodeAt = (depth: number): number => rows.find((row) => row.n_gen > 0 && row.n_prompt === 0 && (row.n_depth ?? 0) === depth)?.avg_ts ?? NaN;
    return {
        promptTokensPerSecond: rows.find((row) => row.n_prompt > 0 && row.n_gen === 0 && (row.n_depth ?? 0) === 0)?.avg_ts ?? NaN,
        decodeTokensPerSecond: decodeAt(0),
        decodeAtDepthTokensPerSecond: decodeAt(promptTokens)
    };
}

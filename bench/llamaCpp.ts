import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { copyFile, mkdir, readdir, readFile, rm } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { repoRoot } from "./shared.js";

const run = promisify(execFile);

/**
 * llama.cpp's own llama-bench and llama-server, built once from the source node-llama-cpp ships
 * (llama/gitRelease.bundle, the same llama.cpp release) into a cache outside the repo. Built with
 * GGML_BACKEND_DL and without a CPU backend of its own: node-llama-cpp's prebuilt
 * `libggml-cpu-*.so` variants are copied beside the binaries, and ggml loads the best-scoring one
 * as node-llama-cpp does, so both sides run the very same kernel binaries. (A GGML_NATIVE build
 * runs other kernels, and on a VM whose CPU reports AMX it dies with an invalid opcode in ggml's
 * AMX q8_0 kernel.) Never committed.
 */
export async function ensureLlamaCppTools(): Promise<{ bench: string; server: string }> {
    const cacheDir = process.env.MAPLE_LLAMA_CPP_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "maple", "llama.cpp");
    const source = join(cacheDir, "src");
    const build = join(source, "build-dl");
    const bin = join(build, "bin");
    const tools = { bench: join(bin, "llama-bench"), server: join(bin, "llama-server") };
    if (!existsSync(tools.bench) || !existsSync(tools.server)) {
        await mkdir(cacheDir, { recursive: true });
        if (!existsSync(source)) {
            console.log(`cloning llama.cpp from node-llama-cpp's bundle into ${source}`);
            await run("git", ["clone", "-q", join(repoRoot, "node_modules", "node-llama-cpp", "llama", "gitRelease.bundle"), source]);
        }
        console.log("building llama-bench and llama-server (once; several minutes on 2 cores)");
        await run("cmake", ["-S", source, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF", "-DGGML_BACKEND_DL=ON",
            "-DBUILD_SHARED_LIBS=ON", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
            "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TOOLS=ON"], { maxBuffer: 1 << 26 });
        await new Promise<void>((resolve, reject) => {
            const child = spawn("cmake", ["--build", build, "-j", "2", "--target", "llama-bench", "llama-server"], { stdio: "ignore" });
            child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`llama.cpp build failed (${code})`))));
        });
    }
    await useNodeLlamaCppCpuVariants(bin);
    return tools;
}

/** The folder of the node-llama-cpp prebuilt binaries Maple loads on this platform (its CPU build). */
function nodeLlamaCppBinaries(): string {
    const platform = `${process.platform}-${process.arch}`;
    return join(repoRoot, "node_modules", "@node-llama-cpp", platform, "bins", platform);
}

/** Replaces whatever CPU backend sits beside the binaries with node-llama-cpp's own variant files. */
async function useNodeLlamaCppCpuVariants(bin: string): Promise<void> {
    for (const name of await readdir(bin)) {
        if (/^libggml-cpu.*\.so$/.test(name)) await rm(join(bin, name));
    }
    const prebuilt = nodeLlamaCppBinaries();
    for (const name of await readdir(prebuilt)) {
        if (/^libggml-cpu-.*\.so$/.test(name)) await copyFile(join(prebuilt, name), join(bin, name));
    }
}

/** The `libggml-cpu-*.so` variant a running process has mapped (Linux), if any yet. */
export async function mappedCpuVariant(pid: number): Promise<string | undefined> {
    const maps = await readFile(`/proc/${pid}/maps`, "utf8").catch(() => "");
    return /(libggml-cpu[^/\s]*\.so)/.exec(maps)?.[1];
}

/**
 * The CPU variant a short-lived process ran, read from it while it runs. The last one seen, not the
 * first: at start ggml loads every variant in turn to score it (a poll caught cooperlake's file
 * mapped in a process that went on to run zen4's).
 */
async function lastMappedCpuVariant(child: ChildProcess, exited: Promise<unknown>): Promise<string | undefined> {
    let variant: string | undefined;
    let running = true;
    void exited.then(() => (running = false));
    while (running) {
        variant = await mappedCpuVariant(child.pid!) ?? variant;
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 100))]);
    }
    return variant;
}

export interface LlamaBenchRow {
    n_prompt: number;
    n_gen: number;
    n_depth?: number;
    avg_ts: number;
}

/**
 * Runs llama-bench (`command`: the binary and its arguments, after any launcher such as taskset)
 * with JSON output, and returns its rows and the CPU kernel file it ran.
 */
export async function llamaBenchRows(command: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<{ rows: LlamaBenchRow[]; cpuVariant: string | undefined }> {
    const child = spawn(command[0]!, [...command.slice(1), "-o", "json"], { stdio: ["ignore", "pipe", "ignore"], env });
    let stdout = "";
    child.stdout.on("data", (data: Buffer) => (stdout += data.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    const cpuVariant = await lastMappedCpuVariant(child, exited);
    const code = await exited;
    if (code !== 0) throw new Error(`llama-bench exited with ${code}`);
    return { rows: JSON.parse(stdout) as LlamaBenchRow[], cpuVariant };
}

/**
 * Prints the CPU variant each process mapped and refuses to go on when they differ or one is
 * unknown: figures from different kernels are not a comparison of servers.
 */
export async function requireSameKernels(processes: readonly { name: string; pid: number; variant?: string }[]): Promise<string> {
    const variants = await Promise.all(processes.map(async (each) => each.variant ?? await mappedCpuVariant(each.pid)));
    console.log(`kernels: ${processes.map((each, index) => `${each.name} ${variants[index] ?? "(none mapped)"}`).join(", ")}`);
    const distinct = new Set(variants);
    if (distinct.size !== 1 || variants[0] === undefined) {
        throw new Error("the contenders run different CPU kernels (or one is unknown): not comparing them");
    }
    return variants[0];
}

/**
 * What makes llama-server or llama-bench keep its weights as Maple does by default on Linux
 * (docs/huge-pages.md): read into its own memory (`--load-mode none`) with glibc's malloc asking
 * for transparent huge pages. With it, a comparison measures the servers, not their page sizes.
 */
export const inHugePages = {
    args: ["--load-mode", "none"],
    env: { ...process.env, GLIBC_TUNABLES: "glibc.malloc.hugetlb=1" }
} as const;

export interface LlamaBenchResult {
    promptTokensPerSecond: number;
    /** Decode into an empty context: llama-bench's usual tg figure. */
    decodeTokensPerSecond: number;
    /**
     * Decode after `promptTokens` tokens already in the context, which is what a server's decode
     * after a prompt is; attention over the prompt makes it slower (maple-preview: 33.6 → 31.1 tok/s at 200).
     */
    decodeAtDepthTokensPerSecond: number;
    /** The `libggml-cpu-*.so` variant it ran. */
    cpuVariant: string | undefined;
}

/** llama-bench's pp (prompt) and tg (decode, at depth 0 and at the prompt's depth) throughput, averaged over its repetitions. */
export async function runLlamaBench(binary: string, modelPath: string, threads: number, promptTokens: number, decodeTokens: number,
    hugePages = false): Promise<LlamaBenchResult> {
    const { rows, cpuVariant: variant } = await llamaBenchRows([binary, "-m", modelPath, "-t", String(threads), "-p", String(promptTokens),
        "-n", String(decodeTokens), "-d", `0,${promptTokens}`, "-r", "3", ...(hugePages ? inHugePages.args : [])], hugePages ? inHugePages.env : process.env);
    const decodeAt = (depth: number): number => rows.find((row) => row.n_gen > 0 && row.n_prompt === 0 && (row.n_depth ?? 0) === depth)?.avg_ts ?? NaN;
    return {
        promptTokensPerSecond: rows.find((row) => row.n_prompt > 0 && row.n_gen === 0 && (row.n_depth ?? 0) === 0)?.avg_ts ?? NaN,
        decodeTokensPerSecond: decodeAt(0),
        decodeAtDepthTokensPerSecond: decodeAt(promptTokens),
        cpuVariant: variant
    };
}

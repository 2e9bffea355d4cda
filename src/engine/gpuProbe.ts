import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import type { GpuBackend } from "./backendChoice.js";

export interface GpuProbe {
    /** The devices the backend's build finds; empty when it finds none or does not load. */
    devices: string[];
    /** Why there are none, when the probe itself failed (the build did not load, the child crashed). */
    error?: string;
}

/**
 * Asks a GPU build which devices it finds, in a child process. node-llama-cpp's "auto" takes the
 * Vulkan build whenever a Vulkan loader is installed, even when ggml then finds no device (Mesa's
 * CPU drivers are left out), and a process cannot load a second build after the first: the builds
 * share library names (libllama-common.so, libggml-base.so), so the second would bind to the
 * first's. Asking in a child leaves this process free to load the CPU build instead. Costs about
 * a second (node-llama-cpp tests a prebuilt binary in a child of its own first).
 */
export function probeGpuDevices(backend: GpuBackend, timeoutMs = 120_000): Promise<GpuProbe> {
    return new Promise((resolve) => {
        execFile(process.execPath, [fileURLToPath(import.meta.url), backend], { timeout: timeoutMs, maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
            const line = stdout.split("\n").reverse().find((text) => text.startsWith("{"));
            if (line !== undefined) {
                try {
                    resolve(JSON.parse(line) as GpuProbe);
                    return;
                } catch { /* reported below */ }
            }
            const detail = stderr.trim().split("\n").at(-1) ?? "";
            resolve({ devices: [], error: `${error?.message.split("\n")[0] ?? "no answer"}${detail === "" ? "" : `: ${detail}`}` });
        });
    });
}

/** The child: node gpuProbe.js BACKEND prints {"devices": [...]} (or an error) as its last line. */
async function probeInThisProcess(backend: GpuBackend): Promise<GpuProbe> {
    try {
        const llama = await getLlama({ gpu: backend, build: "never", progressLogs: false, logLevel: LlamaLogLevel.disabled });
        const devices = llama.gpu === backend ? await llama.getGpuDeviceNames() : [];
        await llama.dispose();
        return { devices };
    } catch (error) {
        return { devices: [], error: `node-llama-cpp could not load its ${backend} build (${(error as Error).name}: ${(error as Error).message})` };
    }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
    const backend = process.argv[2] as GpuBackend;
    // Exits once the line is written: a GPU runtime may keep threads that would hold the child open.
    process.stdout.write(`${JSON.stringify(await probeInThisProcess(backend))}\n`, () => process.exit(0));
}

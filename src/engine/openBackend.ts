import { getLlamaGpuTypes, readGgufFileInfo, type Llama } from "node-llama-cpp";
import { chooseBackend, keepBackend, noDeviceWarning, type BackendChoice, type GpuBackend, type GpuSetting, type WeightTypeShare } from "./backendChoice.js";
import { tensorSummaries } from "./describeModel.js";
import { probeGpuDevices, type GpuProbe } from "./gpuProbe.js";
import { openLlama, type LlamaLog } from "./openLlama.js";
import { weightTypeShares } from "./weightTypes.js";

/** An explicit --gpu backend that cannot load here; the server says it in one line and does not start the model. */
export class BackendUnavailableError extends Error {
    constructor(message: string) {
        super(message);
        this.name = "BackendUnavailableError";
    }
}

export interface OpenedBackend {
    llama: Llama;
    choice: BackendChoice;
}

export interface BackendOptions {
    gpu: GpuSetting;
    threads: number;
    /** llama.cpp's own log lines (openLlama). */
    onLog?: LlamaLog;
}

/**
 * node-llama-cpp's build for the CPU: its own CPU build, except on Apple silicon, where it ships
 * only the Metal one (@node-llama-cpp/mac-arm64-metal), which runs the CPU with no layers offloaded.
 */
const cpuBuild: GpuBackend | false = process.platform === "darwin" && process.arch === "arm64" ? "metal" : false;

const probes = new Map<GpuBackend, Promise<GpuProbe>>();
/** "auto"'s choice for the process's first model: later models stay on its build (keepBackend). */
let firstAutoChoice: Promise<BackendChoice> | undefined;
/** One opening a model file and setting: the server reads the file's facts and then loads it, with the same Llama and choice. */
const opened = new Map<string, Promise<OpenedBackend>>();

const installHints: Record<GpuBackend, string> = {
    cuda: "it needs an NVIDIA driver and the CUDA runtime",
    vulkan: "it needs the Vulkan loader (libvulkan.so.1) and a driver",
    metal: "it runs only on macOS on Apple silicon"
};

/**
 * The backend for a model file under MAPLE_GPU, and the Llama of its build: chooseBackend's
 * decision, made from the file's weight types (GGUF tensor info, not the weights), the GPU builds
 * node-llama-cpp detects, and (for "auto") the devices each one finds. The same answer for the
 * same file and setting (the server opens it to read the file's facts, the engine to load it);
 * the caller logs `choice.warnings`.
 */
export function openBackend(modelPath: string, options: BackendOptions): Promise<OpenedBackend> {
    const key = `${options.gpu}/${options.threads}/${modelPath}`;
    const cached = opened.get(key);
    if (cached !== undefined) return cached;
    const opening = open(modelPath, options);
    opened.set(key, opening);
    opening.catch(() => opened.delete(key));
    return opening;
}

async function open(modelPath: string, options: BackendOptions): Promise<OpenedBackend> {
    const weights = await modelWeightTypes(modelPath);
    let choice: BackendChoice;
    if (options.gpu === "auto" && firstAutoChoice !== undefined) {
        choice = keepBackend(await firstAutoChoice, weights);
    } else {
        if (options.gpu !== "auto" && options.gpu !== "cpu" && !(await getLlamaGpuTypes("allValid")).includes(options.gpu)) {
            throw new BackendUnavailableError(`--gpu ${options.gpu}: node-llama-cpp has no ${options.gpu} build for this platform; ${installHints[options.gpu]}`);
        }
        const detected = (await getLlamaGpuTypes("supported")).filter((type): type is GpuBackend => type !== false);
        const choosing = chooseBackend(options.gpu, { detected, weights, probe: async (backend) => (await probe(backend)).devices });
        if (options.gpu === "auto") {
            firstAutoChoice = choosing;
            choosing.catch(() => { firstAutoChoice = undefined; });
        }
        choice = await choosing;
    }
    const gpu = choice.backend === "cpu" ? cpuBuild : choice.backend;
    let llama: Llama;
    try {
        llama = await openLlama(options.threads, options.onLog, gpu);
    } catch (error) {
        if (choice.backend === "cpu" || options.gpu === "auto") throw error;
        throw new BackendUnavailableError(`--gpu ${choice.backend}: node-llama-cpp could not load its ${choice.backend} build (${(error as Error).message}); `
            + installHints[choice.backend]);
    }
    if (choice.backend !== "cpu") {
        const devices = await llama.getGpuDeviceNames();
        choice = { ...choice, devices, warnings: devices.length === 0 ? [...choice.warnings, noDeviceWarning(choice.backend)] : choice.warnings };
    }
    return { llama, choice };
}

function probe(backend: GpuBackend): Promise<GpuProbe> {
    let probing = probes.get(backend);
    if (probing === undefined) {
        probing = probeGpuDevices(backend);
        probes.set(backend, probing);
    }
    return probing;
}

/** The file's weight types and their shares, from its GGUF tensor table. */
async function modelWeightTypes(modelPath: string): Promise<WeightTypeShare[]> {
    const info = await readGgufFileInfo(modelPath, { readTensorInfo: true });
    return weightTypeShares(tensorSummaries(info.fullTensorInfo ?? info.tensorInfo ?? []));
}

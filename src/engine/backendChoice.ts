/** A GPU backend node-llama-cpp ships a prebuilt llama.cpp for. */
export type GpuBackend = "cuda" | "vulkan" | "metal";
/** The backend a model runs on. */
export type Backend = GpuBackend | "cpu";
/** MAPLE_GPU: a backend, or "auto". */
export type GpuSetting = Backend | "auto";

/**
 * Weight types each GPU backend of the bundled llama.cpp (node-llama-cpp 3.22.1, release v0.5.0)
 * has no matrix-product kernels for, read from each backend's `supports_op` for MUL_MAT,
 * MUL_MAT_ID and GET_ROWS: `ggml/src/ggml-cuda/ggml-cuda.cu` lists neither TQ1_0 nor TQ2_0 (no
 * file under ggml-cuda/ names them); `ggml-metal/ggml-metal-device.m` refuses TQ1_0 and NVFP4
 * (`ggml_metal_supports_mul_mat_op`) and has TQ2_0 kernels; `ggml-vulkan.cpp` has shaders for all
 * of them. llama.cpp keeps a tensor whose type the device lacks in host memory and runs its
 * products on the CPU, saying so only at debug level. Re-check when node-llama-cpp moves.
 */
export const missingWeightKernels: Readonly<Record<GpuBackend, readonly string[]>> = {
    cuda: ["TQ1_0", "TQ2_0"],
    metal: ["TQ1_0", "NVFP4"],
    vulkan: []
};

/** One weight type of a model file and its share of the parameters (0–1). */
export interface WeightTypeShare {
    type: string;
    share: number;
}

/** The model's weight types `backend` has no kernels for, largest share first. */
export function lackingWeightTypes(backend: GpuBackend, weights: readonly WeightTypeShare[]): WeightTypeShare[] {
    const missing = new Set(missingWeightKernels[backend]);
    return weights.filter((weight) => missing.has(weight.type)).sort((a, b) => b.share - a.share);
}

/** "TQ2_0 (97% of the weights)", "TQ1_0 (60%) and TQ2_0 (1%)". */
function describeLacking(lacking: readonly WeightTypeShare[]): string {
    const percent = (share: number): string => `${share >= 0.01 ? Math.round(share * 100) : "<1"}%`;
    const parts = lacking.map((weight, index) => `${weight.type} (${percent(weight.share)}${index === 0 ? " of the weights" : ""})`);
    return parts.length <= 1 ? parts.join("") : `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)}`;
}

const backendNames: Record<Backend, string> = { cuda: "CUDA", vulkan: "Vulkan", metal: "Metal", cpu: "CPU" };

export interface BackendChoice {
    backend: Backend;
    /** The device names of the chosen GPU backend (probed for "auto"; empty for the CPU, or unknown until opened). */
    devices: readonly string[];
    /** Why this backend: one line for the start-up log. */
    reason: string;
    /** Said at warn level: a GPU left unused, or an explicit backend that lacks the model's weight types. */
    warnings: string[];
}

export interface BackendFacts {
    /** The GPU backends node-llama-cpp finds usable here, in its order of preference (getLlamaGpuTypes("supported")). */
    detected: readonly GpuBackend[];
    /** The model file's weight types (weightTypeShares). */
    weights: readonly WeightTypeShare[];
    /** The devices a backend finds (an empty list: none); called only for a backend that is a candidate. */
    probe: (backend: GpuBackend) => Promise<readonly string[]>;
}

/**
 * Chooses the backend for a model. An explicit setting is kept, with a warning when the backend
 * lacks kernels for some of the model's weight types: it still starts, as llama-server does with
 * `-ngl`, since llama.cpp runs those products on the CPU and the rest (attention, dense layers,
 * KV cache) stays on the GPU, a placement some users choose on purpose (as with `--cpu-moe`).
 * "auto" takes the first detected GPU backend, in node-llama-cpp's order (CUDA, then Vulkan;
 * Metal on a Mac), that has kernels for every weight type and a device, else the CPU; each
 * backend passed over is named with the reason.
 */
export async function chooseBackend(setting: GpuSetting, facts: BackendFacts): Promise<BackendChoice> {
    if (setting === "cpu") return { backend: "cpu", devices: [], reason: "--gpu cpu", warnings: [] };
    if (setting !== "auto") {
        const lacking = lackingWeightTypes(setting, facts.weights);
        const warnings = lacking.length === 0 ? [] : [
            `--gpu ${setting}: the bundled llama.cpp's ${backendNames[setting]} backend has no kernels for ${describeLacking(lacking)}; `
            + "llama.cpp keeps those tensors in host memory and runs their products on the CPU, so only the rest is on the GPU"
            + (lackingWeightTypes("vulkan", facts.weights).length === 0 ? " (--gpu vulkan runs them all on the GPU)" : "")
        ];
        return { backend: setting, devices: [], reason: `--gpu ${setting}`, warnings };
    }
    const passedOver: string[] = [];
    const warnings: string[] = [];
    for (const backend of facts.detected) {
        const lacking = lackingWeightTypes(backend, facts.weights);
        if (lacking.length > 0) {
            const why = `${backendNames[backend]} left out: the bundled llama.cpp's ${backendNames[backend]} backend has no kernels for ${describeLacking(lacking)}`;
            passedOver.push(why);
            warnings.push(`${why}; --gpu ${backend} would run those products on the CPU`);
            continue;
        }
        const devices = await facts.probe(backend);
        if (devices.length === 0) {
            passedOver.push(`${backendNames[backend]} left out: its build loads but finds no device`);
            continue;
        }
        return { backend, devices, reason: [`auto: ${backendNames[backend]} (${devices.join(", ")})`, ...passedOver].join("; "), warnings };
    }
    const reason = facts.detected.length === 0 ? "auto: no GPU backend here (node-llama-cpp found no CUDA runtime or Vulkan loader)" : "auto: CPU";
    return { backend: "cpu", devices: [], reason: [reason, ...passedOver].join("; "), warnings };
}

/** The warning for a GPU backend that was opened (explicitly) and found no device: everything runs on the CPU. */
export function noDeviceWarning(backend: GpuBackend): string {
    return `--gpu ${backend}: the ${backendNames[backend]} build loaded but found no device, so every layer runs on the CPU, through node-llama-cpp's prebuilt addon `
        + "(without the patched CPU addon's sampling in the decode job); --gpu cpu runs the patched one"
        + (backend === "vulkan" ? ". ggml leaves CPU Vulkan drivers (lavapipe) out unless GGML_VK_VISIBLE_DEVICES names them" : "");
}

/**
 * A later model under "auto" stays on the backend chosen for the process's first one (one build a
 * process, see probeGpuDevices), with a warning when that backend lacks some of its weight types.
 */
export function keepBackend(first: BackendChoice, weights: readonly WeightTypeShare[]): BackendChoice {
    const lacking = first.backend === "cpu" ? [] : lackingWeightTypes(first.backend, weights);
    const warnings = lacking.length === 0 ? [] : [
        `auto: this model stays on ${backendNames[first.backend]}, chosen for the first model (one llama.cpp build a process), whose backend has no kernels for `
        + `${describeLacking(lacking)}; llama.cpp runs their products on the CPU`
    ];
    return { backend: first.backend, devices: first.devices, reason: `auto: ${backendNames[first.backend]}, as chosen for the first model`, warnings };
}

/**
 * Whether flash attention must stay off on these devices. Mesa's CPU Vulkan driver, lavapipe
 * ("llvmpipe ..."; Debian 12's Mesa 22.3.6), crashes (SIGSEGV on its queue thread, inside
 * libvulkan_lvp.so) in the bundled llama.cpp's Vulkan flash attention: on maple-tiny, a one-token
 * decode after a 64-token prompt crashed in 8 runs of 8, and in none of 8 with flash attention off
 * (it crashes from about 20 cached tokens); qwen3-tiny did not crash (0 of 8). Lavapipe is for
 * testing the GPU path, and the standard attention runs it.
 */
export function flashAttentionCrashes(devices: readonly string[]): boolean {
    return devices.some((name) => name.startsWith("llvmpipe"));
}

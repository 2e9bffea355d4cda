import { readFileSync } from "node:fs";
import { stat } from "node:fs/promises";
import { gibibytes, processMemory } from "../processMemory.js";

/** How the weights reach llama.cpp: copied into RAM, mapped from the file, or chosen (chooseWeightsLoad). */
export type WeightsSetting = "auto" | "ram" | "mmap";

export interface WeightsFacts {
    setting: WeightsSetting;
    fileBytes: number;
    /** Memory the process can still take without swapping or an OOM kill: within a container's limit when there is one (processMemory). */
    availableBytes: number;
    /** Whether glibc's malloc gets transparent huge pages for llama.cpp's buffers (mallocHugePages). */
    hugePages: boolean;
    /** The weights stay in host memory (a CPU build); a GPU build copies them to the device either way. */
    cpu: boolean;
}

export interface WeightsLoad {
    useMmap: boolean;
    reason: string;
}

/** The largest share of available memory a copy of the weights may take; above it the file is mapped, which the kernel may page. */
export const ramCopyShare = 0.8;

/**
 * Chooses whether llama.cpp maps the GGUF file (llama.cpp's default) or reads the weights into
 * memory of its own. Read into malloc'd memory that glibc advises for huge pages (bin/maple.cjs),
 * the weights sit in 2 MiB pages instead of the page cache's 4 KiB ones, and a decode, which
 * streams through them every token, misses the TLB far less: llama-bench, 2 threads, decode at
 * depth 200, qwen3-0.6b twin 47.3-47.6 tok/s mapped against 51.6-53.0 in RAM, maple-preview twin
 * 42.4-42.7 against 47.7-47.8 (docs/huge-pages.md). Without huge pages a copy decodes no faster
 * and only costs memory; a file near the size of free memory stays mapped, so that it is paged
 * rather than killed for memory.
 */
export function chooseWeightsLoad(facts: WeightsFacts): WeightsLoad {
    if (facts.setting === "mmap") return { useMmap: true, reason: "--weights mmap" };
    if (facts.setting === "ram") return { useMmap: false, reason: "--weights ram" };
    if (!facts.cpu) return { useMmap: true, reason: "a GPU build: the weights go to the device" };
    if (!facts.hugePages) return { useMmap: true, reason: "no huge pages for malloc here (see docs/huge-pages.md): a copy in RAM would decode no faster" };
    if (facts.fileBytes > ramCopyShare * facts.availableBytes) {
        return { useMmap: true, reason: `the file (${gibibytes(facts.fileBytes)} GiB) is more than ${ramCopyShare * 100}% of the available memory (${gibibytes(facts.availableBytes)} GiB)` };
    }
    return { useMmap: false, reason: "read into huge pages: decodes faster than mapped (docs/huge-pages.md)" };
}

/**
 * Whether glibc advises its large allocations for transparent huge pages and the kernel gives
 * them: GLIBC_TUNABLES with glibc.malloc.hugetlb=1 (set by bin/maple.cjs) and THP not "never", or
 * hugetlb=2 (reserved hugetlbfs pages).
 */
export function mallocHugePages(tunables: string | undefined, transparentHugePages: string | undefined): boolean {
    const hugetlb = /(?:^|:)glibc\.malloc\.hugetlb=(\d+)/.exec(tunables ?? "")?.[1];
    if (hugetlb === "2") return true;
    return hugetlb === "1" && transparentHugePages !== undefined && !transparentHugePages.includes("[never]");
}

/** chooseWeightsLoad for a model file in this process, now. */
export async function weightsLoadFor(modelPath: string, setting: WeightsSetting = "auto", cpu: boolean): Promise<WeightsLoad> {
    return chooseWeightsLoad({ setting, fileBytes: (await stat(modelPath)).size, availableBytes: processMemory().availableBytes, hugePages: processHugePages(), cpu });
}

/** mallocHugePages for this process. */
export function processHugePages(): boolean {
    if (process.platform !== "linux") return false;
    let enabled: string | undefined;
    try {
        enabled = readFileSync("/sys/kernel/mm/transparent_hugepage/enabled", "utf8");
    } catch {
        enabled = undefined;
    }
    return mallocHugePages(process.env.GLIBC_TUNABLES, enabled);
}

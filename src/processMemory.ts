import { existsSync, readFileSync } from "node:fs";
import { freemem, totalmem } from "node:os";

/** The memory a Maple process may count on, for every default that is sized from memory. */
export interface ProcessMemory {
    /** The container's limit when one is set below the machine's memory, else the machine's memory. */
    totalBytes: number;
    /** What the process can still take now without swapping or an OOM kill. */
    availableBytes: number;
    /** The cgroup limit in force (v1 or v2), when there is one below the machine's memory. */
    limitBytes: number | undefined;
    /** The machine's memory, whatever the limit. */
    machineBytes: number;
}

/** What the system reports, before it is turned into ProcessMemory. */
export interface MemoryReadings {
    machineBytes: number;
    /** Node's `process.constrainedMemory()`: the cgroup limit; 0, undefined or a huge number when there is none. */
    constrainedBytes: number | undefined;
    /** Node's `process.availableMemory()` (the limit less the cgroup's usage, or MemAvailable), else os.freemem(). */
    availableBytes: number;
    /** The cgroup's inactive file cache (memory.stat), which its usage counts and the kernel reclaims first; 0 when unknown. */
    reclaimableBytes?: number;
}

/**
 * ProcessMemory from the readings. A cgroup with no limit reads as the largest number its
 * interface can hold (cgroup v1: 2^63 rounded to a page), and a limit above the machine's memory
 * bounds nothing: both count as no limit. Within a limit, what is available is the limit less the
 * cgroup's working set, as the kubelet counts it: its usage includes the page cache of every file
 * it read (a model file just downloaded or checked: gigabytes), of which the inactive part goes
 * first under pressure. Counted as used, it made maple-preview's weights look too large to copy
 * inside a 10 GiB pod (measured: 4.6 GiB "available" of 10 right after the file was read).
 */
export function memoryFrom(readings: MemoryReadings): ProcessMemory {
    const constrained = readings.constrainedBytes ?? 0;
    const limitBytes = constrained > 0 && constrained < readings.machineBytes ? constrained : undefined;
    const totalBytes = limitBytes ?? readings.machineBytes;
    const availableBytes = readings.availableBytes + (limitBytes === undefined ? 0 : readings.reclaimableBytes ?? 0);
    return { totalBytes, availableBytes: Math.min(availableBytes, totalBytes), limitBytes, machineBytes: readings.machineBytes };
}

/**
 * This process's memory, now. Inside a container the machine's memory is the node's, not the
 * pod's: sized from it, a server copies its weights and sizes its slots for memory it will never
 * get, and the kernel kills it during the load. Node reads the cgroup's limit and usage itself
 * (libuv's uv_get_constrained_memory and uv_get_available_memory, cgroup v1 and v2).
 */
export function processMemory(): ProcessMemory {
    return memoryFrom({
        machineBytes: totalmem(),
        constrainedBytes: typeof process.constrainedMemory === "function" ? process.constrainedMemory() : undefined,
        availableBytes: typeof process.availableMemory === "function" ? process.availableMemory() : freemem(),
        reclaimableBytes: cgroupInactiveFileBytes()
    });
}

/**
 * The inactive file cache of this process's memory cgroup: `total_inactive_file` in cgroup v1's
 * memory.stat (the hierarchy's), `inactive_file` in v2's. The cgroup's own directory is found from
 * /proc/self/cgroup, or is the hierarchy's root inside a container's cgroup namespace. 0 when
 * none can be read (not Linux, no memory controller).
 */
export function cgroupInactiveFileBytes(): number {
    if (process.platform !== "linux") return 0;
    try {
        const lines = readFileSync("/proc/self/cgroup", "utf8").split("\n");
        const v1 = lines.map((line) => /^\d+:(?:[^:]*,)?memory(?:,[^:]*)?:(.*)$/.exec(line)?.[1]).find((path) => path !== undefined);
        const v2 = lines.map((line) => /^0::(.*)$/.exec(line)?.[1]).find((path) => path !== undefined);
        const [root, path, key] = v1 !== undefined ? ["/sys/fs/cgroup/memory", v1, "total_inactive_file"] : ["/sys/fs/cgroup", v2 ?? "/", "inactive_file"];
        const stat = [`${root}${path}/memory.stat`, `${root}/memory.stat`].find((file) => existsSync(file));
        if (stat === undefined) return 0;
        const value = new RegExp(`^${key} (\\d+)$`, "m").exec(readFileSync(stat, "utf8"))?.[1];
        return value === undefined ? 0 : Number(value);
    } catch {
        return 0;
    }
}

/** GiB with one decimal, for log lines and help text. */
export function gibibytes(bytes: number): string {
    return (bytes / (1 << 30)).toFixed(1);
}

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
}

/**
 * ProcessMemory from the readings. A cgroup with no limit reads as the largest number its
 * interface can hold (cgroup v1: 2^63 rounded to a page), and a limit above the machine's memory
 * bounds nothing: both count as no limit.
 */
export function memoryFrom(readings: MemoryReadings): ProcessMemory {
    const constrained = readings.constrainedBytes ?? 0;
    const limitBytes = constrained > 0 && constrained < readings.machineBytes ? constrained : undefined;
    const totalBytes = limitBytes ?? readings.machineBytes;
    return { totalBytes, availableBytes: Math.min(readings.availableBytes, totalBytes), limitBytes, machineBytes: readings.machineBytes };
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
        availableBytes: typeof process.availableMemory === "function" ? process.availableMemory() : freemem()
    });
}

/** GiB with one decimal, for log lines and help text. */
export function gibibytes(bytes: number): string {
    return (bytes / (1 << 30)).toFixed(1);
}

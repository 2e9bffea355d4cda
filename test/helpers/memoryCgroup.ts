import { existsSync, readFileSync } from "node:fs";
import { mkdir, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** A memory cgroup made for a test: a process moved into `procsFile` runs under `limitBytes`. */
export interface MemoryCgroup {
    procsFile: string;
    /** Removes the cgroup once its processes have exited. */
    remove(): Promise<void>;
}

/**
 * Makes a memory cgroup with a limit, as `docker run --memory` or a pod's `limits.memory` does:
 * cgroup v1 (/sys/fs/cgroup/memory) or v2 (/sys/fs/cgroup with the memory controller given to
 * its children). Returns why not (for a test's skip) where the process may not make one: not
 * root, or no writable cgroup hierarchy.
 */
export async function createMemoryCgroup(name: string, limitBytes: number): Promise<MemoryCgroup | string> {
    if (process.getuid?.() !== 0) return "needs root to make a memory cgroup";
    const v1 = "/sys/fs/cgroup/memory";
    const v2 = "/sys/fs/cgroup";
    const v2HasMemory = existsSync(join(v2, "cgroup.subtree_control")) && readFileSync(join(v2, "cgroup.subtree_control"), "utf8").split(/\s+/).includes("memory");
    const [root, limitFile] = existsSync(join(v1, "memory.limit_in_bytes")) ? [v1, "memory.limit_in_bytes"] : v2HasMemory ? [v2, "memory.max"] : [undefined, undefined];
    if (root === undefined || limitFile === undefined) return "no writable memory cgroup hierarchy (v1 memory, or v2 with the memory controller delegated)";
    const dir = join(root, `${name}-${process.pid}`);
    try {
        await mkdir(dir);
        await writeFile(join(dir, limitFile), String(limitBytes));
    } catch (error) {
        await rmdir(dir).catch(() => undefined);
        return `cannot make a memory cgroup at ${dir}: ${(error as Error).message}`;
    }
    return {
        procsFile: join(dir, "cgroup.procs"),
        async remove() {
            // The kernel empties the cgroup shortly after its last process exits.
            for (let attempt = 0; attempt < 50; attempt += 1) {
                try {
                    await rmdir(dir);
                    return;
                } catch {
                    await new Promise((resolve) => setTimeout(resolve, 100));
                }
            }
        }
    };
}

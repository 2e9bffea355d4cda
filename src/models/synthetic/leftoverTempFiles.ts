import { readdir, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/** `<final name>.tmp-<pid>-<random>`: the pid lets a later run tell abandoned files from live ones. */
export function tempPathFor(finalPath: string): string {
    return `${finalPath}.tmp-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
}

/**
 * Deletes temp files a crashed or killed writer left next to `finalPath` (up to gigabytes
 * each); files of writers still running, in this or another process, are left alone.
 */
export async function removeAbandonedTempFiles(finalPath: string): Promise<void> {
    const prefix = `${basename(finalPath)}.tmp-`;
    const names = await readdir(dirname(finalPath)).catch(() => [] as string[]);
    for (const name of names) {
        if (!name.startsWith(prefix)) continue;
        const pid = Number(name.slice(prefix.length).split("-")[0]);
        if (Number.isInteger(pid) && pid !== process.pid && !isProcessAlive(pid)) {
            await unlink(join(dirname(finalPath), name)).catch(() => undefined);
        }
    }
}

function isProcessAlive(pid: number): boolean {
    try {
        process.kill(pid, 0); // signal 0 only checks that the process exists
        return true;
    } catch (error) {
        // EPERM: it exists but belongs to someone else
        return (error as NodeJS.ErrnoException).code === "EPERM";
    }
}

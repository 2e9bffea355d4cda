/**
 * The prompt cache's host-memory tier is a directory on a tmpfs (/dev/shm), which has a size of
 * its own: Docker and Kubernetes give a container 64 MiB there unless told otherwise (`docker run
 * --shm-size`, an `emptyDir: {medium: Memory}` mounted at /dev/shm). A bound larger than the
 * tmpfs's free room would fail its saves one by one; the tier is cut to what fits instead, and the
 * cut is said at start with the setting that gives the room.
 */
export interface RamTierRoom {
    /** The tier's bound: the requested one, or 90% of the tmpfs's free room when that is less. */
    boundBytes: number;
    /** Set when the bound had to be cut: what to tell the operator. */
    shortfall: string | undefined;
}

/** Free room is kept at 10% for the tmpfs's other users (and llama.cpp's file being written). */
export const usableShare = 0.9;

export function ramTierRoom(requestedBytes: number, root: string, freeBytes: number): RamTierRoom {
    const usable = Math.floor(freeBytes * usableShare);
    if (requestedBytes <= usable) return { boundBytes: requestedBytes, shortfall: undefined };
    return {
        boundBytes: usable,
        shortfall: `the prompt cache's host-memory tier asks for ${mebibytes(requestedBytes)} MiB but ${root} has ${mebibytes(freeBytes)} MiB free: `
            + `it keeps ${mebibytes(usable)} MiB. Give ${root} the room (docker run --shm-size, or an emptyDir with medium: Memory at ${root} in Kubernetes; `
            + "docs/deploy.md), or set --cache-ram to what it has"
    };
}

function mebibytes(bytes: number): number {
    return Math.round(bytes / (1 << 20));
}

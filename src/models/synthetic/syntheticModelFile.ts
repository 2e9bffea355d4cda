import { mkdir, readdir, rename, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { readGgufExtent } from "./ggufExtent.js";
import { writeGgufFile, type WriteOptions } from "./ggufFileWriter.js";
import { placeTensors } from "./ggufLayout.js";
import { removeAbandonedTempFiles, tempPathFor } from "./leftoverTempFiles.js";
import { layoutSyntheticModel, syntheticModelTensors, tensorSeed } from "./modelContent.js";
import type { SyntheticModelSpec } from "./modelSpec.js";
import { tensorDataChunks } from "./tensorData.js";

/** `${modelsDir}/synthetic/<name>-v<version>.gguf` */
export function syntheticModelPath(spec: SyntheticModelSpec, modelsDir: string): string {
    return join(modelsDir, "synthetic", `${spec.name}-v${spec.version}.gguf`);
}

/**
 * Files only ever appear at their final path by an atomic rename of a finished, fsynced temp
 * file, so an existing file should be complete; this also catches one truncated or replaced
 * since: its size must be what its own header implies, with the tensors this spec has. Reading
 * the header's extent takes milliseconds, where building the expected header (tokenizer and
 * all) would take most of a second on every server start.
 */
export async function isCompleteSyntheticModel(spec: SyntheticModelSpec, path: string): Promise<boolean> {
    const extent = await readGgufExtent(path);
    if (extent === undefined) return false;
    const { tensors, dataBytes } = placeTensors(syntheticModelTensors(spec));
    return (
        extent.actualFileBytes === extent.expectedFileBytes
        && extent.tensorCount === tensors.length
        && extent.dataBytes === dataBytes
    );
}

/** Writes the model to a temp file next to `path`, then renames it into place. */
export async function writeSyntheticModel(spec: SyntheticModelSpec, path: string, options: WriteOptions): Promise<void> {
    await mkdir(dirname(path), { recursive: true });
    await removeAbandonedTempFiles(path);
    const layout = layoutSyntheticModel(spec);
    const tempPath = tempPathFor(path);
    try {
        await writeGgufFile(tempPath, layout, (tensor) => tensorDataChunks(tensor.plan, tensorSeed(spec, tensor.plan.name)), options);
        await rename(tempPath, path);
    } catch (error) {
        await unlink(tempPath).catch(() => undefined);
        throw error;
    }
    await removeOlderVersions(spec, dirname(path));
}

/**
 * Once version N is in place, earlier versions of the model are dead weight (maple-preview is
 * 6 GB). A process still serving one keeps its mapping: unlinking does not pull the pages away.
 */
async function removeOlderVersions(spec: SyntheticModelSpec, directory: string): Promise<void> {
    const prefix = `${spec.name}-v`;
    const names = await readdir(directory).catch(() => [] as string[]);
    for (const name of names) {
        if (!name.startsWith(prefix) || !name.endsWith(".gguf")) continue;
        const version = name.slice(prefix.length, -".gguf".length);
        if (/^\d+$/.test(version) && Number(version) < spec.version) {
            await unlink(join(directory, name)).catch(() => undefined);
        }
    }
}

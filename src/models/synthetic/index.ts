import { findSyntheticModelSpec, syntheticModelSpecs } from "./modelCatalog.js";
import { sharedWrite } from "./sharedWrite.js";
import { isCompleteSyntheticModel, syntheticModelPath, writeSyntheticModel } from "./syntheticModelFile.js";

export { syntheticMarkerKey } from "./commonMetadata.js";

/** Models this module can write: tiny ones for tests (the format twins among them), full-size ones for benchmarks. */
export const syntheticModelNames: readonly string[] = syntheticModelSpecs.map((spec) => spec.name);

export interface SyntheticWriteProgress {
    writtenBytes: number;
    totalBytes: number;
}

/**
 * Writes the model once into `${modelsDir}/synthetic/<name>-v<N>.gguf` (atomically: temp file +
 * rename) and returns its path; reuses an existing complete file. Unknown name → throws an Error
 * whose message lists the valid names.
 *
 * The weights are random but deterministic (the same name always gives the same bytes); the
 * architecture, the tokenizer (Qwen3's, or a format twin's family's) and the chat template are real, so the file loads and
 * generates in llama.cpp like the model it imitates. Concurrent calls for the same model in one
 * process share a single write. `signal` cancels this call's wait (and the write, when no other
 * caller still waits for it); a cancelled write leaves no file behind.
 */
export async function ensureSyntheticModel(
    name: string,
    modelsDir: string,
    options: { onProgress?: (p: SyntheticWriteProgress) => void; signal?: AbortSignal } = {}
): Promise<string> {
    const spec = findSyntheticModelSpec(name);
    if (spec === undefined) {
        throw new Error(`Unknown synthetic model "${name}"; valid names: ${syntheticModelNames.join(", ")}`);
    }
    const path = syntheticModelPath(spec, modelsDir);
    if (await isCompleteSyntheticModel(spec, path)) return path;
    await sharedWrite(path, (signal, onProgress) => writeSyntheticModel(spec, path, { signal, onProgress }), options);
    return path;
}

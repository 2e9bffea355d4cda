/**
 * What the models directory holds, for `maple models` and `maple rm`: downloads under `hf/`
 * (complete files, with the record of their spec, and `.ipull` partial downloads) and synthetic
 * models under `synthetic/` (current, outdated versions, and temp files of a write in progress).
 */
import { readdir, stat, unlink } from "node:fs/promises";
import { basename, join, relative, resolve } from "node:path";
import { partialDownloadSuffix } from "../engine/modelDownload.js";
import { readDownloadRecord, recordPathFor, recordSuffix } from "./downloadRecord.js";
import { huggingFaceDir, isHuggingFaceSpec } from "./huggingFace.js";
import { expandShortName, officialFiles, shortNameOf, type KnownFiles } from "./officialModels.js";
import { modelNameOf } from "./servedModelSpecs.js";
import { findSyntheticModelSpec } from "./synthetic/modelCatalog.js";
import { isCompleteSyntheticModel, syntheticModelPath } from "./synthetic/syntheticModelFile.js";

export type StoredModelStatus =
    /** whole and checked: ready to serve */
    | "complete"
    /** an interrupted download (`maple pull` resumes it) or a synthetic write in progress */
    | "partial"
    /** an official file whose sha256 has not been checked yet (the next pull or serve checks it) */
    | "unverified"
    /** a synthetic model of an older version, or a file that is not what its name says: rewritten on next use */
    | "outdated";

export interface StoredModel {
    /** The spec that fetches or writes it; undefined for a download Maple has no record of. */
    spec: string | undefined;
    /** `maple-preview:tq2` for an official file. */
    shortName: string | undefined;
    /** Path relative to the models directory. */
    file: string;
    path: string;
    bytes: number;
    kind: "huggingface" | "synthetic";
    status: StoredModelStatus;
}

/** Everything in `modelsDir`, downloads first, each group sorted by file name. */
export async function listStoredModels(modelsDir: string, knownFiles: KnownFiles = officialFiles): Promise<StoredModel[]> {
    return [...await listDownloads(modelsDir, knownFiles), ...await listSyntheticModels(modelsDir)];
}

async function listDownloads(modelsDir: string, knownFiles: KnownFiles): Promise<StoredModel[]> {
    const dir = huggingFaceDir(modelsDir);
    const models: StoredModel[] = [];
    for (const name of await sortedNames(dir)) {
        const path = join(dir, name);
        const partial = name.endsWith(partialDownloadSuffix);
        if (!partial && !name.endsWith(".gguf")) continue;
        const bytes = await sizeOf(path);
        if (bytes === undefined) continue;
        const finalPath = partial ? path.slice(0, -partialDownloadSuffix.length) : path;
        const record = await readDownloadRecord(finalPath);
        const spec = record?.spec;
        let status: StoredModelStatus = partial ? "partial" : "complete";
        const known = spec === undefined ? undefined : knownFiles[spec];
        if (!partial && known?.sha256 !== undefined && record?.verifiedSha256 !== known.sha256) status = "unverified";
        models.push({ spec, shortName: spec && shortNameOf(spec), file: relative(modelsDir, path), path, bytes, kind: "huggingface", status });
    }
    return models;
}

async function listSyntheticModels(modelsDir: string): Promise<StoredModel[]> {
    const dir = join(modelsDir, "synthetic");
    const models: StoredModel[] = [];
    for (const name of await sortedNames(dir)) {
        const match = /^(.+)-v(\d+)\.gguf(\.tmp-.*)?$/.exec(name);
        if (match === null) continue;
        const [, modelName = "", version, temp] = match;
        const path = join(dir, name);
        const bytes = await sizeOf(path);
        if (bytes === undefined) continue;
        const spec = findSyntheticModelSpec(modelName);
        let status: StoredModelStatus = "partial";
        if (temp === undefined) {
            const current = spec !== undefined && Number(version) === spec.version
                && syntheticModelPath(spec, modelsDir) === path && await isCompleteSyntheticModel(spec, path);
            status = current ? "complete" : "outdated";
        }
        models.push({ spec: `synthetic:${modelName}`, shortName: undefined, file: relative(modelsDir, path), path, bytes, kind: "synthetic", status });
    }
    return models;
}

/**
 * The complete models of `modelsDir` as MAPLE_LOAD_ON_DEMAND finds them, read once: a lookup of
 * the model a name names (its spec, its short name, or the name it is served under: `qwen3-tiny`
 * for `synthetic:qwen3-tiny`), giving the spec that loads it (its path when Maple has no record of
 * one) and its file as an absolute path, which is the same whatever name found it.
 */
export async function storedModelLookup(modelsDir: string): Promise<(name: string) => { spec: string; file: string } | undefined> {
    const complete = (await listStoredModels(modelsDir)).filter((model) => model.status === "complete");
    return (name) => {
        const match = complete.find((model) => model.spec === name || model.shortName === name || modelNameOf(model.spec ?? model.path) === name);
        return match === undefined ? undefined : { spec: match.spec ?? match.path, file: resolve(match.path) };
    };
}

/**
 * Deletes every stored file `target` names: a spec (`hf:…`, `synthetic:NAME`, a short name such as
 * `maple-preview:tq1`) or a file name as `maple models` shows it. Returns what was removed; a
 * download's partial file and its record go with it.
 */
export async function removeStoredModels(modelsDir: string, target: string, knownFiles: KnownFiles = officialFiles): Promise<StoredModel[]> {
    const spec = isHuggingFaceSpec(target) || target.startsWith("synthetic:") ? target : expandShortName(target) ?? target;
    const matches = (await listStoredModels(modelsDir, knownFiles))
        .filter((model) => model.spec === spec || model.file === target || basename(model.file) === target);
    for (const model of matches) {
        await unlink(model.path).catch((error: NodeJS.ErrnoException) => {
            if (error.code !== "ENOENT") throw error;
        });
        if (model.kind === "huggingface") {
            const finalPath = model.path.endsWith(partialDownloadSuffix) ? model.path.slice(0, -partialDownloadSuffix.length) : model.path;
            await unlink(recordPathFor(finalPath)).catch(() => undefined);
        }
    }
    return matches;
}

async function sortedNames(dir: string): Promise<string[]> {
    const names = await readdir(dir).catch(() => [] as string[]);
    return names.filter((name) => !name.endsWith(recordSuffix)).sort();
}

async function sizeOf(path: string): Promise<number | undefined> {
    return stat(path).then((stats) => (stats.isFile() ? stats.size : undefined), () => undefined);
}

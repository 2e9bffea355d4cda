/**
 * Maple's view of Hugging Face models: which model specs name one, where they are stored, and
 * which model Maple serves when none is given. The transfer itself is in the engine's
 * `downloadModel`.
 */
import path from "node:path";
import { downloadModel, type DownloadModelOptions } from "../engine/modelDownload.js";

/**
 * The model Maple serves by default: deepgrove's maple-preview GGUF release.
 *
 * The repository name `deepgrove/maple-preview-GGUF` was confirmed from public Hugging Face
 * pages (activity on that repository; the base model is `deepgrove/maple-preview`). Its file
 * list could not be checked offline, so the `Q4_K_M` quantization tag is an assumption
 * (node-llama-cpp's own default quantization); if the repository names its quantizations
 * differently, resolving this spec fails with "Cannot get quantization ...".
 */
export const defaultModelSpec = "hf:deepgrove/maple-preview-GGUF:Q4_K_M";

/** Model spec prefixes that name a Hugging Face file (the same ones node-llama-cpp accepts). */
const huggingFacePrefixes = ["hf:", "huggingface:"];

/**
 * True for `hf:owner/repo/file.gguf`, `hf:owner/repo:quant` (also `hf://…`, `huggingface:…`).
 * Case-sensitive like node-llama-cpp; says nothing about whether the repository exists.
 */
export function isHuggingFaceSpec(spec: string): boolean {
    return huggingFacePrefixes.some((prefix) => spec.startsWith(prefix) && spec.length > prefix.length);
}

/**
 * The local path of a Hugging Face model, downloading it into `${modelsDir}/hf/` first unless a
 * complete copy is already there (then no network is used). An interrupted download is resumed
 * by the next call. Throws a TypeError for specs that `isHuggingFaceSpec` rejects.
 */
export function resolveHuggingFaceModel(spec: string, modelsDir: string, options: DownloadModelOptions = {}): Promise<string> {
    if (!isHuggingFaceSpec(spec)) {
        return Promise.reject(new TypeError(`Not a Hugging Face model spec: "${spec}" (expected hf:owner/repo/file.gguf or hf:owner/repo:quant)`));
    }
    return downloadModel(spec, path.join(modelsDir, "hf"), options);
}

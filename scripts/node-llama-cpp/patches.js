// The changes Maple makes to node-llama-cpp 3.22.1 are unified diffs in patches/node-llama-cpp/,
// one file per change, each with a header saying what it does, why, and what it measured; their
// paths are node-llama-cpp's package layout (dist/… for its JS, llama/addon/… for its native
// source), so `git apply` takes them as they are. They are applied here with jsdiff (the `diff`
// package, pinned) at fuzz factor 0: every context line must match, and each hunk must match at
// one place only, so on another version a patch fails loudly instead of half-applying.
import { readdirSync, readFileSync } from "node:fs";
import { applyPatch, parsePatch, reversePatch } from "diff";

export const patchesDir = new URL("../../patches/node-llama-cpp/", import.meta.url);

/**
 * @typedef {import("diff").StructuredPatch} FileDiff
 * @typedef {{ name: string, text: string, files: Map<string, FileDiff> }} PackagePatch
 *   `files`: each file's diff, keyed by its path in node-llama-cpp's package
 */

/**
 * Every patch of `dir`, in name order (the order they are applied in).
 * @param {URL} [dir]
 * @returns {PackagePatch[]}
 */
export function readPatches(dir = patchesDir) {
    return readdirSync(dir).filter((name) => name.endsWith(".patch")).sort().map((name) => {
        const text = readFileSync(new URL(name, dir), "utf8");
        const files = new Map(parsePatch(text).map((diff) => [diff.newFileName.replace(/^b\//, ""), diff]));
        if (files.size === 0) throw new Error(`${name}: no file diff in it`);
        const elsewhere = [...files.keys()].find((path) => !/^(dist|llama\/addon)\//.test(path));
        if (elsewhere !== undefined) throw new Error(`${name}: ${elsewhere} is neither node-llama-cpp's JS (dist/) nor its addon source (llama/addon/)`);
        return { name, text, files };
    });
}

/**
 * Applies, in order, the patches that touch `path` (a path in node-llama-cpp's package) to its
 * text. With `skipApplied`, a patch already in the text (its reverse applies) is left as it is,
 * so patching a file twice changes nothing.
 * @param {string} text
 * @param {string} path
 * @param {PackagePatch[]} patches
 * @param {{ skipApplied?: boolean }} [options]
 * @returns {{ text: string, applied: string[], present: string[] }} the patched text, the
 *   patches applied now and those found already applied
 */
export function applyPatches(text, path, patches, { skipApplied = false } = {}) {
    const applied = [];
    const present = [];
    let result = text;
    for (const { name, files } of patches) {
        const diff = files.get(path);
        if (diff === undefined) continue;
        if (skipApplied && applyPatch(result, reversePatch(diff), { fuzzFactor: 0 }) !== false) {
            present.push(name);
            continue;
        }
        const mismatch = diff.hunks.map((hunk) => checkHunk(result, hunk)).find((problem) => problem !== undefined);
        const patched = mismatch === undefined ? applyPatch(result, diff, { fuzzFactor: 0 }) : false;
        if (patched === false) {
            throw new Error(`${name} does not apply to node-llama-cpp's ${path}: ${mismatch ?? "its hunks do not fit in order"}; is node-llama-cpp still 3.22.1?`);
        }
        result = patched;
        applied.push(name);
    }
    return { text: result, applied, present };
}

/** Why a hunk would not apply exactly once to `text`, or undefined when it would. */
function checkHunk(text, hunk) {
    const lines = text.split("\n");
    const before = hunk.lines.filter((line) => line[0] === " " || line[0] === "-").map((line) => line.slice(1));
    let places = 0;
    for (let at = 0; at + before.length <= lines.length; at++) {
        if (before.every((line, index) => lines[at + index] === line)) places += 1;
    }
    if (places === 1) return undefined;
    const header = `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`;
    const changed = hunk.lines.find((line) => line[0] === "-") ?? hunk.lines.find((line) => line[0] === " ") ?? "";
    return `the hunk ${header} (${JSON.stringify(changed.slice(1).trim())}) matches ${places === 0 ? "nowhere" : `${places} places`}`;
}

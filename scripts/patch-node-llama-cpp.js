#!/usr/bin/env node
// Patches node-llama-cpp 3.22.1 (pinned) after install with the unified diffs in
// patches/node-llama-cpp/ (each one's header says what it does, why, and what it measured;
// node-llama-cpp/patches.js applies them): idempotent, and loud when the source is not the
// expected one (another version).
// - Its JS (dist/…) is patched in place: a patch already applied is found and left.
// - Its native addon is rebuilt from the source it ships with the llama/addon/… diffs applied
//   (node-llama-cpp/buildAddon.js). Where it cannot be rebuilt (no compiler, another platform,
//   MAPLE_SKIP_ADDON_BUILD=1) the prebuilt addon stays and node-llama-cpp samples as it ships.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { buildPatchedAddon } from "./node-llama-cpp/buildAddon.js";
import { applyPatches, readPatches } from "./node-llama-cpp/patches.js";

const log = (line) => console.log(`patch-node-llama-cpp: ${line}`);
const require = createRequire(import.meta.url);
const packageDir = dirname(dirname(require.resolve("node-llama-cpp")));

try {
    const patches = readPatches();
    const jsFiles = new Set(patches.flatMap((patch) => [...patch.files.keys()]).filter((path) => path.startsWith("dist/")));
    for (const path of jsFiles) {
        const file = join(packageDir, path);
        const { text, applied } = applyPatches(readFileSync(file, "utf8"), path, patches, { skipApplied: true });
        if (applied.length > 0) {
            writeFileSync(file, text);
            log(`patched ${basename(path)} (${applied.join("; ")})`);
        }
    }
} catch (error) {
    console.error(`patch-node-llama-cpp: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
}
// A failed rebuild costs speed, not correctness: it warns and keeps the prebuilt addon.
if (process.env.MAPLE_SKIP_ADDON_BUILD === "1") log("MAPLE_SKIP_ADDON_BUILD=1: kept the prebuilt addon");
else {
    try {
        log(await buildPatchedAddon({ nodeModules: dirname(packageDir), log }));
    } catch (error) {
        const detail = error instanceof Error ? (error.stderr || error.message) : String(error);
        console.warn(`patch-node-llama-cpp: the addon could not be rebuilt, kept the prebuilt one: ${String(detail).slice(0, 2000)}`);
    }
}

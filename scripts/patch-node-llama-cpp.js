#!/usr/bin/env node
// Patches node-llama-cpp 3.22.1 (pinned) after install; idempotent, and loud when the source is
// not the expected one (another version):
// - its JS (dist/evaluator/LlamaContext/LlamaContext.js): per-sequence sampling errors, the JS
//   half of sampling inside the decode worker, and a sequence's tokens appended in place instead
//   of copied at every token (node-llama-cpp/contextHunks.js says why);
// - its native addon, rebuilt from the source it ships with the native half of that change
//   (node-llama-cpp/addonHunks.js, node-llama-cpp/buildAddon.js), samplers that reuse their
//   vocabulary-sized buffers (node-llama-cpp/samplerHunks.js) and one ggml threadpool kept per
//   context (node-llama-cpp/threadpoolHunks.js). Where it cannot be rebuilt (no
//   compiler, another platform, MAPLE_SKIP_ADDON_BUILD=1) the prebuilt addon stays and
//   node-llama-cpp samples as it ships.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { buildPatchedAddon } from "./node-llama-cpp/buildAddon.js";
import { contextPatches } from "./node-llama-cpp/contextHunks.js";
import { applyHunks } from "./node-llama-cpp/hunks.js";

const log = (line) => console.log(`patch-node-llama-cpp: ${line}`);
const require = createRequire(import.meta.url);
const packageDir = dirname(dirname(require.resolve("node-llama-cpp")));
const contextFile = join(packageDir, "dist", "evaluator", "LlamaContext", "LlamaContext.js");

try {
    let source = readFileSync(contextFile, "utf8");
    const missing = contextPatches.filter((patch) => !source.includes(patch.marker));
    for (const patch of missing) source = applyHunks(source, patch.hunks, contextFile);
    if (missing.length > 0) {
        writeFileSync(contextFile, source);
        log(`patched LlamaContext.js (${missing.map((patch) => patch.marker.replace(/^\/\* maple-patch: | \*\/$/g, "")).join("; ")})`);
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

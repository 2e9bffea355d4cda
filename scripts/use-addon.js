#!/usr/bin/env node
// Switches node-llama-cpp's CPU addon in node_modules between the one Maple rebuilds with its
// patches (docs/node-llama-cpp.md) and the prebuilt one node-llama-cpp ships, so that the suite
// can run on both (MAPLE_TEST_ADDON in scripts/run-tests.js). node-llama-cpp loads its prebuilt
// addon from a fixed path (`bins/<platform>/llama-addon.node`) and offers no option to load
// another file, so the switch is a file swap:
//   node scripts/use-addon.js prebuilt   the stock addon (the rebuilt one kept as llama-addon.patched.node)
//   node scripts/use-addon.js patched    the rebuilt addon back (rebuilt again if the patches changed)
//   node scripts/use-addon.js            prints which one is in place
// The rebuild's stamp (maple-addon.json) names the rebuilt addon by its sha256, so an `npm install`
// while the prebuilt one is in place rebuilds it. Files are renamed into place, never written over:
// a process that has the addon loaded keeps its mapping.
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { copyFile, readFile, rename } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildPatchedAddon, prebuiltBinariesDir } from "./node-llama-cpp/buildAddon.js";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const nodeModules = join(root, "node_modules");
const log = (line) => console.log(`use-addon: ${line}`);

async function sha256(path) {
    return createHash("sha256").update(await readFile(path)).digest("hex");
}

/** Copies `from` over `to` through a temporary file beside it and a rename. */
async function replace(from, to) {
    await copyFile(from, `${to}.tmp`);
    await rename(`${to}.tmp`, to);
}

/**
 * Which addon is in place: "patched" (the stamp's build), "prebuilt" (the stock copy, or no
 * rebuild ever made), or "unknown" (neither: a rebuild from other patches).
 */
async function inPlace(files) {
    const active = await sha256(files.active);
    if (files.stamp !== undefined && files.stamp.addon === active) return "patched";
    if (existsSync(files.stock) ? await sha256(files.stock) === active : files.stamp === undefined) return "prebuilt";
    return "unknown";
}

async function main(wanted) {
    const binaries = prebuiltBinariesDir(nodeModules);
    if (binaries === undefined) throw new Error("node-llama-cpp has no prebuilt CPU addon for this platform here");
    const stampPath = join(binaries, "maple-addon.json");
    const files = {
        active: join(binaries, "llama-addon.node"),
        stock: join(binaries, "llama-addon.prebuilt.node"),
        kept: join(binaries, "llama-addon.patched.node"),
        stamp: existsSync(stampPath) ? JSON.parse(await readFile(stampPath, "utf8")) : undefined
    };
    const current = await inPlace(files);
    if (wanted === undefined) {
        console.log(current);
        return;
    }
    if (wanted === "prebuilt") {
        if (current === "prebuilt") return log("the prebuilt addon is in place");
        if (!existsSync(files.stock)) throw new Error("no llama-addon.prebuilt.node beside the addon: reinstall node-llama-cpp");
        if (current === "patched") await replace(files.active, files.kept);
        await replace(files.stock, files.active);
        return log("the prebuilt addon is in place (`node scripts/use-addon.js patched` puts the rebuilt one back)");
    }
    if (wanted === "patched") {
        if (current !== "patched" && files.stamp !== undefined && existsSync(files.kept) && await sha256(files.kept) === files.stamp.addon) {
            await replace(files.kept, files.active);
        }
        // A no-op when the stamp's build is in place and the patches have not changed since; else a rebuild.
        const outcome = await buildPatchedAddon({ nodeModules, log });
        const stamp = existsSync(stampPath) ? JSON.parse(await readFile(stampPath, "utf8")) : undefined;
        if (await inPlace({ ...files, stamp }) !== "patched") throw new Error(`the patched addon could not be put in place: ${outcome}`);
        return log(outcome);
    }
    throw new Error(`usage: node scripts/use-addon.js [prebuilt|patched], not ${wanted}`);
}

try {
    await main(process.argv[2]);
} catch (error) {
    console.error(`use-addon: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
}

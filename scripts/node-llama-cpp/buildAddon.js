// Rebuilds node-llama-cpp's native addon (llama-addon.node) from the source it ships, with the
// llama/addon/… diffs of patches/node-llama-cpp/ applied, against the prebuilt llama.cpp libraries beside it: the same libllama,
// libggml and CPU kernel files, only the addon's own code changes. Takes ~20 s of two cores; needs
// a C++ compiler and git (the llama.cpp headers come from the package's git bundle). Without
// them, or on a platform with no CPU prebuilt here, it says so and leaves the prebuilt addon,
// which node-llama-cpp then runs as it ships (the JS side checks for the new method).
import { execFile, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { basename, join } from "node:path";
import { promisify } from "node:util";
import { applyPatches, readPatches } from "./patches.js";

const run = promisify(execFile);
const stampName = "maple-addon.json";
const addonPrefix = "llama/addon/";

/** The prebuilt CPU binaries node-llama-cpp loads here (its platform package), if installed. */
export function prebuiltBinariesDir(nodeModules) {
    const platform = `${process.platform}-${process.arch}`;
    const dir = join(nodeModules, "@node-llama-cpp", platform, "bins", platform);
    return existsSync(join(dir, "llama-addon.node")) ? dir : undefined;
}

function hasCommand(command) {
    try {
        execFileSync(command, ["--version"], { stdio: "ignore" });
        return true;
    } catch {
        return false;
    }
}

async function sha256(path) {
    return createHash("sha256").update(await readFile(path)).digest("hex");
}

/**
 * @param {{ nodeModules: string, log: (line: string) => void }} options
 * @returns {Promise<string>} what happened, for the install log
 */
export async function buildPatchedAddon({ nodeModules, log }) {
    const binaries = prebuiltBinariesDir(nodeModules);
    if (binaries === undefined) return "no prebuilt CPU addon for this platform: left as it is";
    const addon = join(binaries, "llama-addon.node");
    const packageDir = join(nodeModules, "node-llama-cpp");
    const addonSource = join(packageDir, "llama", "addon");
    const bundle = join(packageDir, "llama", "gitRelease.bundle");
    // The patches' own text, how they are applied and the package's version name the build: a
    // new or changed patch rebuilds.
    const patches = readPatches().filter((patch) => [...patch.files.keys()].some((path) => path.startsWith(addonPrefix)));
    const recipe = createHash("sha256")
        .update(patches.map((patch) => `${patch.name}\n${patch.text}`).join("\n"))
        .update(await readFile(new URL("./patches.js", import.meta.url)))
        .update(await readFile(new URL(import.meta.url)))
        .update(await readFile(join(packageDir, "package.json")))
        .digest("hex");
    const stampPath = join(binaries, stampName);
    const stamp = existsSync(stampPath) ? JSON.parse(await readFile(stampPath, "utf8")) : undefined;
    if (stamp?.recipe === recipe && stamp.addon === await sha256(addon)) return "addon already built with the patch";

    const compiler = process.env.CXX ?? "g++";
    const missing = [compiler, "git"].find((command) => !hasCommand(command));
    if (missing !== undefined) return `no ${missing} here: kept the prebuilt addon (sampling runs as a second native job per token)`;
    if (!existsSync(bundle) || !existsSync(addonSource)) return "node-llama-cpp ships no addon source here: kept the prebuilt addon";

    const work = await mkdtemp(join(tmpdir(), "maple-addon-"));
    try {
        log("cloning the llama.cpp headers from node-llama-cpp's bundle");
        const llamaCpp = join(work, "llama.cpp");
        await run("git", ["clone", "-q", bundle, llamaCpp]);
        const sources = join(work, "addon");
        await copyTree(addonSource, sources);
        await patchAddonSource(sources, patches);

        const files = (await listFiles(sources)).filter((file) => file.endsWith(".cpp"));
        const nodeAddonApi = join(nodeModules, "node-addon-api");
        const nodeApiHeaders = join(nodeModules, "node-api-headers", "include");
        const flags = ["-O3", "-DNDEBUG", "-std=c++17", "-fPIC", "-fexceptions", "-DNAPI_VERSION=7",
            `-I${nodeAddonApi}`, `-I${nodeApiHeaders}`,
            ...["include", "src", "common", "ggml/include", "vendor", "."].map((dir) => `-I${join(llamaCpp, dir)}`)];
        log(`compiling ${files.length} files of the addon with ${compiler} (about 20 s on two cores)`);
        const objects = await mapLimited(files, Math.max(1, availableParallelism()), async (file, index) => {
            const object = join(work, `${index}-${basename(file, ".cpp")}.o`);
            await run(compiler, [...flags, "-c", file, "-o", object], { maxBuffer: 1 << 26 });
            return object;
        });
        // Every prebuilt library but the CPU kernel variants (ggml loads those itself at run time).
        const libraries = (await readdir(binaries)).filter((name) => /^lib.*\.so$/.test(name) && !name.startsWith("libggml-cpu-"));
        const built = join(binaries, "llama-addon.maple.node");
        await run(compiler, ["-shared", "-o", built, ...objects, `-L${binaries}`, "-Wl,--as-needed",
            ...libraries.map((name) => `-l:${name}`), "-Wl,-rpath,$ORIGIN"], { maxBuffer: 1 << 26 });
        // Loaded in a child process first: a broken build must not replace a working addon.
        await run(process.execPath, ["-e", `
            const addon = require(${JSON.stringify(built)});
            for (const method of ["decodeBatchAndSample", "decodeStepsAndSample"]) {
                if (typeof addon.AddonContext?.prototype?.[method] !== "function") throw new Error(method + " is missing");
            }
        `]);
        const stock = join(binaries, "llama-addon.prebuilt.node");
        if (!existsSync(stock)) await copyFile(addon, stock);
        await rename(built, addon);
        await writeFile(stampPath, `${JSON.stringify({ recipe, addon: await sha256(addon) }, null, 2)}\n`);
        return "addon rebuilt: tokens are sampled inside the decode job, samplers reuse their buffers and contexts keep one threadpool";
    } finally {
        await rm(work, { recursive: true, force: true });
        await rm(join(binaries, "llama-addon.maple.node"), { force: true });
    }
}

/** Applies the patches' llama/addon/… diffs to the copy of that folder in `sources`. */
export async function patchAddonSource(sources, patches) {
    const paths = new Set(patches.flatMap((patch) => [...patch.files.keys()]).filter((path) => path.startsWith(addonPrefix)));
    for (const path of paths) {
        const file = join(sources, path.slice(addonPrefix.length));
        await writeFile(file, applyPatches(await readFile(file, "utf8"), path, patches).text);
    }
}

async function copyTree(from, to) {
    await mkdir(to, { recursive: true });
    for (const entry of await readdir(from, { withFileTypes: true })) {
        if (entry.isDirectory()) await copyTree(join(from, entry.name), join(to, entry.name));
        else await copyFile(join(from, entry.name), join(to, entry.name));
    }
}

async function listFiles(dir) {
    const files = [];
    for (const entry of await readdir(dir, { withFileTypes: true })) {
        if (entry.isDirectory()) files.push(...await listFiles(join(dir, entry.name)));
        else files.push(join(dir, entry.name));
    }
    return files;
}

/** Maps with at most `limit` calls in flight, keeping the order. */
async function mapLimited(items, limit, map) {
    const results = new Array(items.length);
    let next = 0;
    const worker = async () => {
        while (next < items.length) {
            const index = next++;
            results[index] = await map(items[index], index);
        }
    };
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
    return results;
}

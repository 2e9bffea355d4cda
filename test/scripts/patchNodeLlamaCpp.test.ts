import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { cp, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { applyPatch, reversePatch, type StructuredPatch } from "diff";

// The patches of patches/node-llama-cpp/ as scripts/patch-node-llama-cpp.js applies them, run on
// the installed package's own sources: its addon source (llama/addon, never patched in place) and
// its LlamaContext.js with the patches taken out again, checked to be 3.22.1's as npm ships it.
// (When the patches replaced the JS string hunks, c6b2399 checked here that both produce the same
// four files byte for byte.)

interface PackagePatch { name: string; text: string; files: Map<string, StructuredPatch> }
interface Applied { text: string; applied: string[]; present: string[] }

// scripts/ is plain JS that npm install runs before any build: imported from the repository.
const repoRoot = new URL("../../../", import.meta.url);
const { readPatches, applyPatches } = await import(new URL("scripts/node-llama-cpp/patches.js", repoRoot).href) as {
    readPatches(): PackagePatch[];
    applyPatches(text: string, path: string, patches: PackagePatch[], options?: { skipApplied?: boolean }): Applied;
};
const { patchAddonSource } = await import(new URL("scripts/node-llama-cpp/buildAddon.js", repoRoot).href) as {
    patchAddonSource(sources: string, patches: PackagePatch[]): Promise<void>;
};
const packageDir = new URL("node_modules/node-llama-cpp/", repoRoot).pathname;

/** sha256 of node-llama-cpp 3.22.1's files as its npm tarball has them. */
const pristineSha256: Record<string, string> = {
    "dist/evaluator/LlamaContext/LlamaContext.js": "32ffecb04387909e904165d9f04282862ce333ba320454462ce057546f03f958",
    "llama/addon/AddonContext.h": "6d14a95a1a80bcdb0d72671cb58745d89140352653b1de6daae25fee164bc203",
    "llama/addon/AddonContext.cpp": "ef154d783ab13970593cae1abc7b18de90f8c8541261925c341c8cf94fa64542",
    "llama/addon/AddonSampler.cpp": "837b9568146240e18bf1fe45f924bb7c87e4962995a0836f80d57a218d71e2be"
};
const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

const patches = readPatches();
const paths = [...new Set(patches.flatMap((patch) => [...patch.files.keys()]))].sort();
const touching = (path: string): string[] => patches.filter((patch) => patch.files.has(path)).map((patch) => patch.name);

/** The file as node-llama-cpp 3.22.1 ships it: the JS with every patch reversed (last first). */
async function pristine(path: string): Promise<string> {
    let text = await readFile(join(packageDir, path), "utf8");
    if (path.startsWith("dist/")) {
        for (const patch of [...patches].reverse()) {
            const diff = patch.files.get(path);
            if (diff === undefined) continue;
            const reversed = applyPatch(text, reversePatch(diff), { fuzzFactor: 0 });
            assert.notEqual(reversed, false, `${patch.name} is not in the installed ${path}`);
            text = reversed as string;
        }
    }
    assert.equal(sha256(text), pristineSha256[path], `${path} is not node-llama-cpp 3.22.1's`);
    return text;
}

describe("node-llama-cpp's patches (patches/node-llama-cpp/)", () => {
    it("are the five named changes, each with a header saying what it does and what it measured", () => {
        assert.deepEqual(patches.map((patch) => patch.name),
            ["sampler-buffers.patch", "sampling-errors.patch", "sampling-in-decode.patch", "threadpool.patch", "tokens-in-place.patch"]);
        assert.deepEqual(paths, Object.keys(pristineSha256).sort());
        for (const patch of patches) {
            const header = patch.text.slice(0, patch.text.indexOf("\ndiff --git "));
            assert.ok(header.split("\n").length >= 5 && header.includes("Measured"), `${patch.name}'s header`);
        }
    });

    it("npm install applied the JS ones: the installed file is 3.22.1's with them, byte for byte", async () => {
        for (const path of paths.filter((candidate) => candidate.startsWith("dist/"))) {
            const base = await pristine(path);
            const result = applyPatches(base, path, patches, { skipApplied: true });
            assert.deepEqual(result.applied, touching(path));
            assert.equal(result.text, await readFile(join(packageDir, path), "utf8"));
        }
    });

    it("apply exactly once to the pristine sources: a second pass finds each applied and changes nothing", async () => {
        for (const path of paths) {
            const base = await pristine(path);
            const first = applyPatches(base, path, patches, { skipApplied: true });
            assert.deepEqual([first.applied, first.present], [touching(path), []], path);
            assert.notEqual(first.text, base);
            const second = applyPatches(first.text, path, patches, { skipApplied: true });
            assert.deepEqual([second.applied, second.present, second.text], [[], touching(path), first.text], path);
            assert.throws(() => applyPatches(first.text, path, patches), /does not apply/, `${path}: applied twice without skipApplied`);
        }
    });

    it("the addon build patches its copy of llama/addon with every addon patch", async () => {
        const work = await mkdtemp(join(tmpdir(), "maple-patches-"));
        try {
            await cp(join(packageDir, "llama", "addon"), work, { recursive: true });
            await patchAddonSource(work, patches);
            for (const path of paths.filter((candidate) => candidate.startsWith("llama/addon/"))) {
                const expected = applyPatches(await pristine(path), path, patches).text;
                assert.equal(await readFile(join(work, path.slice("llama/addon/".length)), "utf8"), expected, path);
            }
        } finally {
            await rm(work, { recursive: true, force: true });
        }
    });

    it("fail loudly, naming the patch, the file and the version, when the source moved or is ambiguous", async () => {
        const path = "dist/evaluator/LlamaContext/LlamaContext.js";
        const base = await pristine(path);
        const moved = base.replace("this._contextTokens = this._contextTokens.concat(tokensToDecode);", "this._contextTokens = [...this._contextTokens, ...tokensToDecode];");
        assert.throws(() => applyPatches(moved, path, patches, { skipApplied: true }),
            /^Error: tokens-in-place\.patch does not apply to node-llama-cpp's dist\/evaluator\/LlamaContext\/LlamaContext\.js: the hunk @@ .* matches nowhere; is node-llama-cpp still 3\.22\.1\?$/);
        const hunk = patches.find((patch) => patch.name === "tokens-in-place.patch")!.files.get(path)!.hunks[0]!;
        const twice = `${base}\n${hunk.lines.filter((line) => !line.startsWith("+")).map((line) => line.slice(1)).join("\n")}\n`;
        assert.throws(() => applyPatches(twice, path, patches), /tokens-in-place\.patch does not apply .* matches 2 places; is node-llama-cpp still 3\.22\.1\?/);
    });
});

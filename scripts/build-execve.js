#!/usr/bin/env node
// Builds native/execve.c into build/execve.node after install, for bin/maple.cjs: on Linux with
// glibc >= 2.35 the `maple` command restarts itself once with GLIBC_TUNABLES=glibc.malloc.hugetlb=1,
// so that llama.cpp's buffers (the weights Maple reads into RAM, the KV cache) get transparent
// huge pages (bin/maple.cjs says why). Elsewhere, or without a C compiler, it says so and builds
// nothing: Maple then runs without huge pages, as before.
import { execFile, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const log = (line) => console.log(`build-execve: ${line}`);
const root = dirname(dirname(fileURLToPath(import.meta.url)));
const output = join(root, "build", "execve.node");

/** glibc's version at run time, as "2.36", or undefined (musl, another OS). */
function glibcVersion() {
    return process.report?.getReport?.().header?.glibcVersionRuntime;
}

/** Node-API's headers: Node's own (official builds ship them), else the node-api-headers package. */
function nodeApiHeaders() {
    const own = join(dirname(process.execPath), "..", "include", "node");
    if (existsSync(join(own, "node_api.h"))) return own;
    try {
        return join(dirname(createRequire(import.meta.url).resolve("node-api-headers/package.json")), "include");
    } catch {
        return undefined;
    }
}

async function build() {
    if (process.env.MAPLE_SKIP_ADDON_BUILD === "1") return "MAPLE_SKIP_ADDON_BUILD=1: built nothing";
    const glibc = glibcVersion();
    const [major, minor] = (glibc ?? "0.0").split(".").map(Number);
    if (process.platform !== "linux" || glibc === undefined || major < 2 || (major === 2 && minor < 35)) {
        return `glibc ${glibc ?? "absent"} on ${process.platform} has no glibc.malloc.hugetlb: built nothing, Maple runs without huge pages`;
    }
    const compiler = process.env.CC ?? "gcc";
    try {
        execFileSync(compiler, ["--version"], { stdio: "ignore" });
    } catch {
        return `no ${compiler} here: built nothing, Maple runs without huge pages`;
    }
    const headers = nodeApiHeaders();
    if (headers === undefined) return "no Node-API headers here: built nothing, Maple runs without huge pages";
    await mkdir(dirname(output), { recursive: true });
    const built = join(dirname(output), "execve.tmp.node");
    await run(compiler, ["-O2", "-shared", "-fPIC", "-std=c11", "-D_GNU_SOURCE", `-I${headers}`, join(root, "native", "execve.c"), "-o", built]);
    // Loaded in a child process first: a broken build must not be left for bin/maple.cjs.
    await run(process.execPath, ["-e", `if (typeof require(${JSON.stringify(built)}).execve !== "function") throw new Error("execve is missing")`]);
    await rename(built, output);
    return `built ${output}`;
}

try {
    log(await build());
} catch (error) {
    await rm(join(dirname(output), "execve.tmp.node"), { force: true });
    const detail = error instanceof Error ? (error.stderr || error.message) : String(error);
    console.warn(`build-execve: could not build, Maple runs without huge pages: ${String(detail).slice(0, 2000)}`);
}

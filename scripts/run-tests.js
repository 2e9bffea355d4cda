#!/usr/bin/env node
// Runs the compiled test files with Node's own test runner, one file at a time: test files
// start real llama.cpp engines, and two of them side by side on a 2-core machine oversubscribe
// the ggml thread pools (tokens go from ~1 ms to ~150 ms).
// MAPLE_TEST_ADDON=prebuilt runs them on node-llama-cpp's prebuilt CPU addon instead of the one
// npm install rebuilt with Maple's patches: it is swapped in for the run (scripts/use-addon.js)
// and the patched one put back after, and tests of patched-only pieces skip, saying so
// (test/helpers/addon.ts). CI runs the suite both ways (.ci/run).
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { spawnSync } from "node:child_process";

const root = new URL("..", import.meta.url).pathname;
const testRoot = join(root, "dist", "test");
const filter = process.argv.slice(2);
const addon = process.env.MAPLE_TEST_ADDON ?? "patched";
if (addon !== "patched" && addon !== "prebuilt") {
    console.error(`MAPLE_TEST_ADDON is patched or prebuilt, not ${addon}`);
    process.exit(1);
}

/** Puts `which` addon in place; exits when it cannot. */
function useAddon(which) {
    const swap = spawnSync(process.execPath, [join(root, "scripts", "use-addon.js"), which], { stdio: "inherit" });
    if (swap.status !== 0) process.exit(swap.status ?? 1);
}

function findTests(dir) {
    const found = [];
    for (const name of readdirSync(dir).sort()) {
        const full = join(dir, name);
        if (statSync(full).isDirectory()) found.push(...findTests(full));
        else if (name.endsWith(".test.js")) found.push(full);
    }
    return found;
}

const files = findTests(testRoot).filter(
    (file) => filter.length === 0 || filter.some((part) => relative(testRoot, file).includes(part))
);
if (files.length === 0) {
    console.error("no test files matched");
    process.exit(1);
}
// Not --test-force-exit: on Node 20 it cut a file's report short (measured: the output parser's
// last 20 tests never reached the runner, and were counted neither passed nor failed).
if (addon === "prebuilt") useAddon("prebuilt");
const result = spawnSync(process.execPath, ["--test", "--test-concurrency=1", ...files], {
    stdio: "inherit",
    env: { ...process.env, UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? "1", MAPLE_TEST_ADDON: addon }
});
// A run cut short (the runner itself killed) leaves the prebuilt addon: `node scripts/use-addon.js patched`.
if (addon === "prebuilt") useAddon("patched");
process.exit(result.status ?? 1);

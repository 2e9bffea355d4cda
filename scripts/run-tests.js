#!/usr/bin/env node
// Runs the compiled test files with Node's own test runner, one file at a time: test files
// start real llama.cpp engines, and two of them side by side on a 2-core machine oversubscribe
// the ggml thread pools (tokens go from ~1 ms to ~150 ms).
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { spawnSync } from "node:child_process";

const root = new URL("..", import.meta.url).pathname;
const testRoot = join(root, "dist", "test");
const filter = process.argv.slice(2);

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
const result = spawnSync(process.execPath, ["--test", "--test-concurrency=1", ...files], {
    stdio: "inherit",
    env: { ...process.env, UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? "1" }
});
process.exit(result.status ?? 1);

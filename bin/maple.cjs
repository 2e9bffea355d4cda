#!/usr/bin/env node
// libuv's thread pool runs llama.cpp's decode calls. With more pool threads than that, decodes hop
// between threads (measured: ~12 ms → ~2 ms per token on a tiny model with one pool thread, while
// ggml made a thread per token; a few percent since contexts keep one threadpool). libuv reads UV_THREADPOOL_SIZE once, when the pool first starts, so it must
// be set before anything uses the pool. This entry is CommonJS for that reason: Node's ES module
// loader reads an ESM entry through the pool before the entry's first line runs, which starts it
// with the default 4 threads. Set UV_THREADPOOL_SIZE yourself to override (file I/O then gets more
// parallelism).
"use strict";
restartWithHugePages();
process.env.UV_THREADPOOL_SIZE ??= "1";

// V8 sizes the old generation's next limit from how fast the program allocates against how fast
// it collects. A server decoding 15-30 tokens a second allocates slowly (~40 KB a token), so V8
// keeps the limit ~10% above the ~43 MB live heap and marks the whole heap about once a request:
// measured on the maple-preview twin pinned to one core, ~1 mark-compact per 128-token request,
// and V8's helper threads and the main thread spent 3.9% of the decode thread's time against 3.1%
// with a fixed 2x factor, which lets the heap grow to ~85 MB and made no mark-compact after start-up.
// That CPU is taken from llama.cpp's threads on the same cores. `node --heap-growing-percent=N`
// overrides it (0 restores V8's own choice).
if (!process.execArgv.some((flag) => flag.startsWith("--heap-growing-percent") || flag.startsWith("--heap_growing_percent"))) {
    require("node:v8").setFlagsFromString("--heap-growing-percent=100");
}

import("../dist/src/cli/main.js")
    .then(({ main }) => main(process.argv.slice(2)))
    .then((code) => {
        if (code !== 0) process.exit(code);
    }, cannotStart);

// main reports its own errors in one line (src/cli/main.ts, unexpectedError). What comes here is
// the command failing to load, dist/ not built or a dependency missing: one line too, the stack
// only at MAPLE_LOG_LEVEL=debug or trace.
function cannotStart(error) {
    const showStack = process.env.MAPLE_LOG_LEVEL === "debug" || process.env.MAPLE_LOG_LEVEL === "trace";
    const message = String(error?.message ?? error).trim().replace(/\s*\n\s*/g, " ");
    const todo = error?.code === "ERR_MODULE_NOT_FOUND" ? "run 'npm install' in Maple's folder, which builds dist/" : "run again with MAPLE_LOG_LEVEL=debug for the stack trace to report";
    console.error(`maple: cannot start: ${message} (${showStack ? "its stack trace follows" : todo})`);
    if (showStack && error?.stack !== undefined) console.error(error.stack);
    process.exit(1);
}

// llama.cpp's CPU buffers (the weights when Maple reads them into RAM, see src/engine/weightsLoad.ts,
// the KV cache, the compute buffers) come from glibc's malloc, and the kernel backs them with
// transparent huge pages only when they are advised (THP "madvise", the usual default).
// glibc.malloc.hugetlb=1 makes malloc advise them: fewer TLB misses while a decode streams through
// the weights. Measured with llama-bench (2 threads, decode at depth 200): the qwen3-0.6b twin
// 47.3-47.6 -> 51.6-53.0 tok/s, the maple-preview twin 42.4-42.7 -> 47.7-47.8, weights in RAM
// against mapped. glibc reads GLIBC_TUNABLES once, when a process starts, so the command restarts
// itself once with it; build/execve.node (scripts/build-execve.js) keeps the pid, stdio and parent.
// MAPLE_HUGE_PAGES=0, a GLIBC_TUNABLES that sets glibc.malloc.hugetlb, or THP "never" leaves the
// process as started.
function restartWithHugePages() {
    const tunables = process.env.GLIBC_TUNABLES ?? "";
    if (process.platform !== "linux" || process.env.MAPLE_HUGE_PAGES === "0" || /(^|:)glibc\.malloc\.hugetlb=/.test(tunables)) return;
    let execve;
    try {
        if (require("node:fs").readFileSync("/sys/kernel/mm/transparent_hugepage/enabled", "utf8").includes("[never]")) return;
        ({ execve } = require("../build/execve.node"));
    } catch {
        return;
    }
    const env = { ...process.env, GLIBC_TUNABLES: tunables === "" ? "glibc.malloc.hugetlb=1" : `${tunables}:glibc.malloc.hugetlb=1` };
    // Returns only when execve failed (an errno): the process goes on as started, without huge pages.
    execve(process.execPath, [process.argv0, ...process.execArgv, ...process.argv.slice(1)], Object.entries(env).map(([key, value]) => `${key}=${value}`));
}

#!/usr/bin/env node
// libuv's thread pool runs llama.cpp's decode calls. With more pool threads than that, decodes hop
// between threads (measured: ~12 ms → ~2 ms per token on a tiny model with one pool thread, while
// ggml made a thread per token; a few percent since contexts keep one threadpool). libuv reads UV_THREADPOOL_SIZE once, when the pool first starts, so it must
// be set before anything uses the pool. This entry is CommonJS for that reason: Node's ES module
// loader reads an ESM entry through the pool before the entry's first line runs, which starts it
// with the default 4 threads. Set UV_THREADPOOL_SIZE yourself to override (file I/O then gets more
// parallelism).
"use strict";
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
    });

#!/usr/bin/env node
// libuv's thread pool runs llama.cpp's decode calls. With more pool threads than that, decode and
// sampling hop between threads on every token (measured: ~12 ms → ~2 ms per token on a tiny model
// with one pool thread). libuv reads UV_THREADPOOL_SIZE once, when the pool first starts, so it must
// be set before anything uses the pool. This entry is CommonJS for that reason: Node's ES module
// loader reads an ESM entry through the pool before the entry's first line runs, which starts it
// with the default 4 threads. Set UV_THREADPOOL_SIZE yourself to override (file I/O then gets more
// parallelism).
"use strict";
process.env.UV_THREADPOOL_SIZE ??= "1";

import("../dist/src/cli/main.js")
    .then(({ main }) => main(process.argv.slice(2)))
    .then((code) => {
        if (code !== 0) process.exit(code);
    });

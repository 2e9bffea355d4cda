#!/usr/bin/env node
// libuv's thread pool runs llama.cpp's decode calls. With more pool threads than that, decode and
// sampling hop between threads on every token (measured: ~12 ms → ~2 ms per token on a tiny model
// with one pool thread). It must be set before anything uses the pool, so here, before any import.
// Set UV_THREADPOOL_SIZE yourself to override (file I/O then gets more parallelism).
process.env.UV_THREADPOOL_SIZE ??= "1";

const { main } = await import("../dist/src/cli/main.js");
const code = await main(process.argv.slice(2));
if (code !== 0) process.exit(code);

#!/usr/bin/env node
// Patches node-llama-cpp 3.22.1 (pinned) where a sampling error inside a decode batch is lost:
// LlamaContext.dispatchPendingBatch runs in `void withLock(...)`, so when sampling fails (e.g. a
// grammar that a logit_bias leaves no token to satisfy) the rejection is unhandled, the process
// exits, and the waiting request never settles. The patch hands each failed sampling's error to
// its own sequence's pending decode, as node-llama-cpp already does for decode errors, so the one
// request fails (500 / in-band error) and the other sequences in the batch carry on.
// Idempotent; fails loudly if the source does not look as expected (another version).
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const marker = "/* maple-patch: per-sequence sampling errors */";
const original = "                await Promise.all(afterDecodeActionResults);\n";
const patched = `                ${marker}
                const settledAfterDecodeActions = await Promise.allSettled(afterDecodeActionResults);
                settledAfterDecodeActions.forEach((settled, index) => {
                    if (settled.status === "rejected")
                        this._dispatchErrorForQueuedDecodesAndDequeue(new Set([afterDecodeActions[index].queuedDecode]), settled.reason);
                });
`;

const require = createRequire(import.meta.url);
const entry = require.resolve("node-llama-cpp");
const file = join(dirname(entry), "evaluator", "LlamaContext", "LlamaContext.js");
const source = readFileSync(file, "utf8");
if (source.includes(marker)) process.exit(0);
if (!source.includes(original)) {
    console.error(`patch-node-llama-cpp: ${file} does not contain the expected code; is node-llama-cpp still 3.22.1?`);
    process.exit(1);
}
writeFileSync(file, source.replace(original, patched));
console.log("patch-node-llama-cpp: per-sequence sampling errors patched into node-llama-cpp");

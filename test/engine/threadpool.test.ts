import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { after, before, it } from "node:test";
import type { LlamaContext, LlamaContextSequence, LlamaModel } from "node-llama-cpp";
import { openLlama } from "../../src/engine/openLlama.js";
import { resolveModel } from "../../src/models/resolveModel.js";
import { needsPatchedAddon } from "../helpers/addon.js";
import { testModelsDir } from "../helpers/testServer.js";

// node-llama-cpp's addon as scripts/patch-node-llama-cpp.js rebuilds it attaches one ggml
// threadpool to each context (docs/node-llama-cpp.md, section 5). Without it, ggml starts a
// threadpool for every graph and joins it after: with two threads, a thread made and ended per
// generated token. Here the context's worker thread must outlive its decodes and do their work.

/** Every thread of this process, with the nanoseconds it has run (schedstat's first field). */
function threadRunTimes(): Map<number, number> {
    const times = new Map<number, number>();
    for (const name of readdirSync("/proc/self/task")) {
        try {
            times.set(Number(name), Number(readFileSync(`/proc/self/task/${name}/schedstat`, "utf8").split(" ")[0]));
        } catch {
            // A thread that ended while listed.
        }
    }
    return times;
}

let model: LlamaModel;
let context: LlamaContext;
let sequence: LlamaContextSequence;
let threadsAtStart: Map<number, number>;

before(async () => {
    // libuv's pool starts at its first use: start it now, so that its thread is not counted as new.
    await readFile(new URL(import.meta.url));
    threadsAtStart = threadRunTimes();
    const { path } = await resolveModel("synthetic:qwen3-tiny", { modelsDir: testModelsDir });
    const llama = await openLlama(2, undefined, false);
    model = await llama.loadModel({ modelPath: path });
    context = await model.createContext({ contextSize: 512, sequences: 1, threads: 2 });
    sequence = context.getSequence();
});
after(async () => {
    await context?.dispose();
    await model?.dispose();
});

async function generate(count: number): Promise<void> {
    await sequence.clearHistory();
    let generated = 0;
    for await (const token of sequence.evaluate(model.tokenize("The threads of a pool", true), { temperature: 0 })) {
        generated += 1;
        if (generated >= count || model.isEogToken(token)) break;
    }
}

it("keeps one worker thread per context across decodes, doing their work", { skip: process.platform !== "linux" ? "reads /proc" : needsPatchedAddon("a threadpool per context") }, async () => {
    await generate(4);
    const afterFirst = threadRunTimes();
    const made = [...afterFirst.keys()].filter((thread) => !threadsAtStart.has(thread));
    await generate(32);
    const afterSecond = threadRunTimes();
    const ran = made.filter((thread) => (afterSecond.get(thread) ?? 0) > (afterFirst.get(thread) ?? Infinity));
    assert.ok(made.length > 0, "no thread outlived the first decodes: the context has no threadpool of its own");
    assert.ok(ran.length > 0, `none of the threads made for the context (${made.join(", ")}) ran during the next decodes`);
});

/**
 * Maple's engine without HTTP: the same generation path as the routes (slot, engine, UTF-8
 * decoding, stop strings) driven in-process. Prints one JSON line like rawNodeLlamaCpp.
 * Usage: node dist/bench/mapleEngine.js MODEL_PATH THREADS PROMPT_TOKENS MAX_TOKENS RUNS [FIRST_RUN] [SLOTS]
 * (FIRST_RUN numbers the runs, which picks their prompts and seeds, so one run at a time can be
 * interleaved with other contenders. SLOTS sizes the context as the server's MAPLE_PARALLEL does:
 * one stream in a 4-sequence context decoded ~3% slower than in a 1-sequence one on qwen3-0.6b.)
 */
import { loadLlamaEngine } from "../src/engine/llamaEngine.js";
import { startTextGeneration } from "../src/generation/generateText.js";
import { Scheduler } from "../src/scheduler/scheduler.js";
import { median, runPrompt } from "./shared.js";

const [modelPath, threadsText = "2", promptTokensText = "200", maxTokensText = "128", runsText = "3", firstRunText = "0", slotsText = "1"] = process.argv.slice(2);
if (modelPath === undefined) throw new Error("usage: mapleEngine MODEL_PATH THREADS PROMPT_TOKENS MAX_TOKENS RUNS [FIRST_RUN] [SLOTS]");
const slots = Number(slotsText);
const engine = await loadLlamaEngine({ modelPath, threads: Number(threadsText), contextSize: 4096, slots, batchSize: 512 });
const scheduler = new Scheduler({ slots, maxQueueDepth: 0, queueTimeoutMs: 1000 });
const results: { ttftMs: number; decodeTokensPerSecond: number; generated: number }[] = [];
let promptTokens = 0;
const firstRun = Number(firstRunText);
for (let run = firstRun; run < firstRun + Number(runsText); run++) {
    const prompt = engine.tokenize(runPrompt(run, Number(promptTokensText)), { specialTokens: true, addBos: true });
    promptTokens = prompt.length;
    const startedAt = performance.now();
    const generation = await startTextGeneration(engine, scheduler, {
        promptTokens: prompt, maxTokens: Number(maxTokensText), stop: [], signal: new AbortController().signal,
        sampling: { temperature: 0.6, topK: 20, topP: 0.95, seed: run + 1, ignoreEos: true }
    });
    let firstAt = 0;
    let lastAt = 0;
    let generated = 0;
    for await (const _piece of generation.pieces) {
        lastAt = performance.now();
        if (generated === 0) firstAt = lastAt;
        generated += 1;
    }
    generation.close();
    results.push({ ttftMs: firstAt - startedAt, decodeTokensPerSecond: (generated - 1) / ((lastAt - firstAt) / 1000), generated });
}
console.log(JSON.stringify({
    promptTokens,
    ttftMs: median(results.map((r) => r.ttftMs)),
    decodeTokensPerSecond: median(results.map((r) => r.decodeTokensPerSecond)),
    generated: results[0]?.generated ?? 0
}));
await engine.dispose();

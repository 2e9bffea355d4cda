/**
 * The baseline: node-llama-cpp driven directly, no HTTP and no Maple, on the same file, threads
 * and sampling. Prints one JSON line: {promptTokens, ttftMs, decodeTokensPerSecond, generated}.
 * Usage: node dist/bench/rawNodeLlamaCpp.js MODEL_PATH THREADS PROMPT_TOKENS MAX_TOKENS RUNS [SEQUENCES]
 * (SEQUENCES: the context's sequence count, one of them used; 4 is what a 4-slot server allocates.)
 */
import { getLlama, LlamaLogLevel, TokenBias, type Token } from "node-llama-cpp";
import { benchPrompt, median } from "./shared.js";

const [modelPath, threadsText = "2", promptTokensText = "200", maxTokensText = "128", runsText = "3", sequencesText = "1"] = process.argv.slice(2);
if (modelPath === undefined) throw new Error("usage: rawNodeLlamaCpp MODEL_PATH THREADS PROMPT_TOKENS MAX_TOKENS RUNS");
const threads = Number(threadsText);
const llama = await getLlama({ gpu: false, build: "never", maxThreads: threads, logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath });
// The same context options as Maple's engine, so the comparison measures only what Maple adds.
const context = await model.createContext({
    contextSize: 4096 * Number(sequencesText), sequences: Number(sequencesText), threads: { ideal: threads, min: threads }, swaFullCache: true, flashAttention: model.flashAttentionSupported
});
const sequence = context.getSequence();
const bias = new TokenBias(model.tokenizer);
const vocabularySize = Number(model.fileInfo.tensorInfo?.find((tensor) => tensor.name === "token_embd.weight")?.dimensions[1] ?? 0);
for (let token = 0; token < vocabularySize; token++) if (model.isEogToken(token as Token)) bias.set(token as Token, "never");

const prompt = model.tokenize(benchPrompt(Number(promptTokensText)), true);
const results: { ttftMs: number; decodeTokensPerSecond: number; generated: number }[] = [];
for (let run = 0; run < Number(runsText); run++) {
    await sequence.clearHistory();
    const startedAt = performance.now();
    let firstAt = 0;
    let lastAt = 0;
    let generated = 0;
    for await (const _token of sequence.evaluate(prompt, { temperature: 0.6, topK: 20, topP: 0.95, seed: run + 1, tokenBias: bias })) {
        lastAt = performance.now();
        if (generated === 0) firstAt = lastAt;
        generated += 1;
        if (generated >= Number(maxTokensText)) break;
    }
    results.push({ ttftMs: firstAt - startedAt, decodeTokensPerSecond: (generated - 1) / ((lastAt - firstAt) / 1000), generated });
}
console.log(JSON.stringify({
    promptTokens: prompt.length,
    ttftMs: median(results.map((r) => r.ttftMs)),
    decodeTokensPerSecond: median(results.map((r) => r.decodeTokensPerSecond)),
    generated: results[0]?.generated ?? 0
}));
await context.dispose();
await model.dispose();

// Writes synthetic models and checks they load and generate in node-llama-cpp, with timings.
//
//   node dist/bench/syntheticModels.js [name ...] [--dir DIR] [--tokens N] [--remove]
//
// Defaults to maple-preview in $TMPDIR/maple-bench-models; an existing file is reused (the
// "ensured in" time is then the reuse check), --remove deletes it afterwards. Uses one thread:
// other engines may share this machine.
import { rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { getLlama, LlamaCompletion, LlamaLogLevel } from "node-llama-cpp";
import { ensureSyntheticModel, syntheticModelNames } from "../src/models/synthetic/index.js";

const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
        dir: { type: "string", default: join(tmpdir(), "maple-bench-models") },
        tokens: { type: "string", default: "16" },
        remove: { type: "boolean", default: false }
    }
});
const names = positionals.length > 0 ? positionals : ["maple-preview"];
const maxTokens = Number(values.tokens);
const seconds = (since: number): string => ((performance.now() - since) / 1000).toFixed(2);
const gigabytes = (bytes: number): string => (bytes / 1e9).toFixed(2);

for (const name of names) {
    if (!syntheticModelNames.includes(name)) throw new Error(`unknown model ${name}; try ${syntheticModelNames.join(", ")}`);
    let started = performance.now();
    let lastReport = 0;
    const path = await ensureSyntheticModel(name, values.dir, {
        onProgress: ({ writtenBytes, totalBytes }) => {
            if (performance.now() - lastReport < 2000 && writtenBytes < totalBytes) return;
            lastReport = performance.now();
            process.stdout.write(`\r${name}: ${gigabytes(writtenBytes)} / ${gigabytes(totalBytes)} GB`);
        }
    });
    const { size } = await stat(path);
    console.log(`\n${name}: ${path}, ${gigabytes(size)} GB, ensured in ${seconds(started)} s`);

    const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
    started = performance.now();
    const model = await llama.loadModel({ modelPath: path });
    console.log(`${name}: loaded in ${seconds(started)} s`);
    const context = await model.createContext({ threads: 1, contextSize: 512 });
    const completion = new LlamaCompletion({ contextSequence: context.getSequence() });
    started = performance.now();
    const text = await completion.generateCompletion("The weather today is", { maxTokens });
    console.log(`${name}: ${model.tokenize(text).length} tokens in ${seconds(started)} s: ${JSON.stringify(text)}`);
    await context.dispose();
    await model.dispose();
    await llama.dispose();

    if (values.remove) await rm(path, { force: true });
}

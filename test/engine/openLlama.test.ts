import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readModelFileFacts } from "../../src/engine/modelFileFacts.js";
import { openLlama } from "../../src/engine/openLlama.js";
import { resolveModel } from "../../src/models/resolveModel.js";
import { testModelsDir } from "../helpers/testServer.js";

// The synthetic maple-tiny's vocabulary makes llama.cpp warn once a load ("control-looking token"):
// a warning that must reach Maple's log, not the process's stdout.
describe("openLlama", () => {
    it("keeps one Llama a process, and llama.cpp's warnings reach the latest caller's log after file facts and a second open", async () => {
        const { path } = await resolveModel("synthetic:maple-tiny", { modelsDir: testModelsDir });
        const first: string[] = [];
        const second: string[] = [];
        const llama = await openLlama(1, (level, message) => first.push(`${level}: ${message}`), false);
        await readModelFileFacts(path, { contextSize: 1024, slots: 1, batchSize: 512, swaFullCache: false }, llama);
        const again = await openLlama(1, (level, message) => second.push(`${level}: ${message}`), false);
        assert.equal(again, llama);
        const model = await again.loadModel({ modelPath: path });
        try {
            // node-llama-cpp hands llama.cpp's lines to JS through a thread-safe call: let them arrive.
            await new Promise((resolve) => setTimeout(resolve, 100));
            assert.equal(first.length, 0, first.join("\n"));
            assert.ok(second.some((line) => line.startsWith("warn: ") && line.includes("control-looking token")), second.join("\n") || "no warning logged");
        } finally {
            await model.dispose();
        }
    });
});

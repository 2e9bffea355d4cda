import type { GpuSetting } from "../../src/engine/backendChoice.js";
import { loadLlamaEngine } from "../../src/engine/loadLlamaEngine.js";
import { resolveModel } from "../../src/models/resolveModel.js";
import { readyModel } from "../../src/server/startServer.js";
import type { ReadyModel } from "../../src/core/modelHost.js";
import { testModelsDir } from "./testServer.js";

export interface TestModel extends AsyncDisposable, ReadyModel {
    dispose(): Promise<void>;
}

/**
 * The real engine on synthetic maple-tiny (one thread, a 1024-token context per slot, the CPU
 * unless `gpu` says otherwise) with the scheduler a server would give it, without the HTTP
 * server: for the core's unit tests.
 */
export async function loadTestModel(options: { slots?: number; gpu?: GpuSetting } = {}): Promise<TestModel> {
    const model = await resolveModel("synthetic:maple-tiny", { modelsDir: testModelsDir });
    const engine = await loadLlamaEngine({ modelPath: model.path, threads: 1, contextSize: 1024, slots: options.slots ?? 2, batchSize: 512, gpu: options.gpu ?? "cpu" });
    const ready = readyModel(engine, { maxQueueDepth: 8, queueTimeoutSeconds: 60 }, model.source, "test");
    const dispose = (): Promise<void> => engine.dispose();
    return { ...ready, dispose, [Symbol.asyncDispose]: dispose };
}

/** Greedy sampling with nothing else set. */
export const greedy = { temperature: 0, topP: 1, topK: 0 } as const;

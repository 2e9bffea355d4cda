import { type LlamaEmbeddingContext, type LlamaModel, type Token } from "node-llama-cpp";
import { ContextLengthExceededError } from "../errors.js";
import { describeModel } from "./describeModel.js";
import type { LlamaLog } from "./openLlama.js";
import { openBackend } from "./openBackend.js";
import type { GpuSetting } from "./backendChoice.js";
import type { ModelInfo } from "./types.js";
import { weightsLoadFor, type WeightsSetting } from "./weightsLoad.js";

export interface EmbeddingEngineOptions {
    modelPath: string;
    threads: number;
    /** Longest input in tokens; capped at the model's training context, which undefined means. */
    contextSize: number | undefined;
    batchSize: number;
    /** How the weights reach llama.cpp (chooseWeightsLoad); default "auto". */
    weights?: WeightsSetting;
    /** llama.cpp's backend and the layers offloaded (MAPLE_GPU, MAPLE_GPU_LAYERS); default "auto" for both. */
    gpu?: GpuSetting;
    gpuLayers?: "auto" | "max" | number;
    signal?: AbortSignal;
    onLoadProgress?: (fraction: number) => void;
    onLog?: LlamaLog;
}

/** One input's vector (L2-normalised, as OpenAI's and llama-server's are) and the tokens it took. */
export interface Embedding {
    vector: number[];
    tokens: number;
}

/** An embedding model loaded for embedding: llama.cpp pools each input's outputs the GGUF's way (mean, cls, last). */
export interface EmbeddingEngine {
    readonly model: ModelInfo;
    /** Width of every vector. */
    readonly dimensions: number;
    /** Longest input, in tokens. */
    readonly contextSize: number;
    readonly loadSeconds: number;
    /** The backend ("cpu", "cuda", "vulkan", "metal") and the layers it holds, e.g. "vulkan, 5/5 layers". */
    readonly device: string;
    tokenize(text: string): number[];
    isValidToken(token: number): boolean;
    /** Embeds each input in turn (text, or token ids); the signal stops between inputs. */
    embed(inputs: readonly (string | readonly number[])[], signal: AbortSignal): Promise<Embedding[]>;
    dispose(): Promise<void>;
}

/**
 * Loads a GGUF for embeddings through node-llama-cpp's embedding context: a context of its own,
 * apart from the chat engine (LlamaEngine), since it computes pooled outputs instead of logits.
 */
export async function loadEmbeddingEngine(options: EmbeddingEngineOptions): Promise<EmbeddingEngine> {
    const startedAt = performance.now();
    const { llama, choice } = await openBackend(options.modelPath, { gpu: options.gpu ?? "auto", threads: options.threads, onLog: options.onLog });
    const onDevice = choice.backend !== "cpu" && choice.devices.length > 0;
    const weights = await weightsLoadFor(options.modelPath, options.weights, !onDevice);
    const model = await llama.loadModel({
        modelPath: options.modelPath, useMmap: weights.useMmap, gpuLayers: onDevice ? options.gpuLayers ?? "auto" : 0,
        onLoadProgress: options.onLoadProgress, loadSignal: options.signal
    });
    try {
        // Unset (the chat models' fitted default): the embedding model's own training context.
        const trainContext = model.trainContextSize || (options.contextSize ?? 4096);
        const contextSize = Math.min(options.contextSize ?? trainContext, trainContext);
        const context = await model.createEmbeddingContext({
            contextSize, batchSize: Math.min(options.batchSize, contextSize), threads: options.threads, createSignal: options.signal
        });
        const device = `${choice.backend}, ${model.gpuLayers}/${model.fileInsights.totalLayers} layers`;
        return new LlamaEmbeddingEngine(model, context, await describeModel(model, options.modelPath), contextSize, (performance.now() - startedAt) / 1000, device);
    } catch (error) {
        await model.dispose();
        throw error;
    }
}

/**
 * Embeds one input at a time. Batching several inputs into one decode is not possible through
 * node-llama-cpp 3.22.1 without patching its addon: LlamaEmbeddingContext holds one sequence, and
 * the addon's AddonContext::GetEmbedding reads `llama_get_embeddings_seq(ctx, 0)` only, so a
 * context of several sequences (or a batch of several inputs) could not read any vector but
 * sequence 0's. On the CPU it costs nothing measurable (bench/NOTES.md, "Embeddings"): per input
 * Maple spends ~2-3 ms beside llama.cpp's decode, and llama-server with 4 slots batching 4
 * inputs per decode was no faster than with one slot on one thread.
 */
class LlamaEmbeddingEngine implements EmbeddingEngine {
    /** One input at a time: the context has one sequence, so concurrent requests queue here. */
    private queue: Promise<unknown> = Promise.resolve();

    constructor(
        private readonly llamaModel: LlamaModel,
        private readonly context: LlamaEmbeddingContext,
        readonly model: ModelInfo,
        readonly contextSize: number,
        readonly loadSeconds: number,
        readonly device: string
    ) {}

    get dimensions(): number {
        return this.llamaModel.embeddingVectorSize;
    }

    tokenize(text: string): number[] {
        return this.llamaModel.tokenize(text, false);
    }

    isValidToken(token: number): boolean {
        return Number.isInteger(token) && token >= 0 && token < this.model.vocabularySize;
    }

    embed(inputs: readonly (string | readonly number[])[], signal: AbortSignal): Promise<Embedding[]> {
        const run = this.queue.then(() => this.embedAll(inputs, signal));
        this.queue = run.catch(() => undefined);
        return run;
    }

    private async embedAll(inputs: readonly (string | readonly number[])[], signal: AbortSignal): Promise<Embedding[]> {
        const results: Embedding[] = [];
        for (const [index, input] of inputs.entries()) {
            signal.throwIfAborted();
            // A copy: node-llama-cpp adds the BOS/EOS tokens the model wants to the array it is given.
            const tokens = typeof input === "string" ? this.tokenize(input) : [...input] as Token[];
            const length = this.context.calculateInputLength([...tokens] as Token[]);
            if (length >= this.contextSize) {
                throw new ContextLengthExceededError(`Input ${index} is ${length} tokens; this embedding model takes at most ${this.contextSize - 1}.`, "input");
            }
            const embedding = await this.context.getEmbeddingFor(tokens as Token[]);
            results.push({ vector: normalised(embedding.vector), tokens: length });
        }
        return results;
    }

    async dispose(): Promise<void> {
        await this.queue;
        await this.context.dispose();
        await this.llamaModel.dispose();
    }
}

function normalised(vector: readonly number[]): number[] {
    const norm = Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
    return norm === 0 ? [...vector] : vector.map((value) => value / norm);
}

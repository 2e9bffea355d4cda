import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { LlamaGrammarEvaluationState, type LlamaContext, type LlamaContextSequence, type LlamaModel, type Token } from "node-llama-cpp";
import { samplesInsideDecode } from "../../src/engine/nativeBatches.js";
import { openLlama } from "../../src/engine/openLlama.js";
import { resolveModel } from "../../src/models/resolveModel.js";
import { needsPatchedAddon, testAddon } from "../helpers/addon.js";
import { testModelsDir } from "../helpers/testServer.js";

// node-llama-cpp's addon as scripts/patch-node-llama-cpp.js rebuilds it samples inside the decode
// job (decodeBatchAndSample). These tests run the same seeded generations through that path and
// through node-llama-cpp's own (a decode job, then a sampling job per sequence), selected per
// context by hiding the native method, and require the very same tokens.

let model: LlamaModel;
let context: LlamaContext;
let first: LlamaContextSequence;
let second: LlamaContextSequence;

before(async () => {
    const { path } = await resolveModel("synthetic:maple-tiny", { modelsDir: testModelsDir });
    const llama = await openLlama(1, undefined, false);
    model = await llama.loadModel({ modelPath: path });
    context = await model.createContext({ contextSize: 2 * 512, sequences: 2, threads: 1 });
    [first, second] = [context.getSequence(), context.getSequence()];
});
after(async () => {
    await context?.dispose();
    await model?.dispose();
});

/** The native method, hidden or restored on this context's addon object. */
function sampleInsideDecode(enabled: boolean): void {
    const native = (context as unknown as { _ctx: object })._ctx;
    const prototype = Object.getPrototypeOf(native) as { decodeBatchAndSample?: unknown };
    if (enabled) Reflect.deleteProperty(native, "decodeBatchAndSample");
    else Object.defineProperty(native, "decodeBatchAndSample", { configurable: true, value: undefined });
    assert.equal(samplesInsideDecode(context), enabled && typeof prototype.decodeBatchAndSample === "function");
}

interface Generation {
    tokens: Token[];
    evaluation: AsyncGenerator<Token, void>;
}

async function startGeneration(sequence: LlamaContextSequence, prompt: string, seed: number, options: { grammar?: boolean } = {}): Promise<Generation> {
    await sequence.clearHistory();
    const grammar = options.grammar === true
        ? new LlamaGrammarEvaluationState({ model, grammar: await model.llama.createGrammar({ grammar: "root ::= [a-z ]+ \".\"" }) })
        : undefined;
    const tokens: Token[] = [];
    const evaluation = sequence.evaluate(model.tokenize(prompt, true), {
        temperature: 0.9,
        topK: 40,
        topP: 0.9,
        seed,
        repeatPenalty: { penalty: 1.3, punishTokens: () => tokens.slice(-16) },
        evaluationPriority: 5,
        // Chosen per token, as Maple's grammar selector does.
        ...grammar === undefined ? {} : { grammarEvaluationState: () => grammar }
    });
    return { tokens, evaluation };
}

async function generate(sequence: LlamaContextSequence, prompt: string, seed: number, count: number, options: { grammar?: boolean } = {}): Promise<Token[]> {
    return (await generateInLockstep([await startGeneration(sequence, prompt, seed, options)], count))[0]!;
}

/**
 * Advances every generation by one token at a time, asking for their next tokens in the same tick,
 * so each decode batch holds one token of every generation on both paths. Left to run freely,
 * node-llama-cpp's own path samples each sequence in a job of its own and queues each next token
 * as its sampling ends: its batches then alternate between the sequences while the in-decode
 * path's hold both. A one-token batch and a two-token batch are different matrix products; on
 * ggml's AVX2 kernels (libggml-cpu-haswell.so) their logits differ in the last bits, enough to
 * change a sampled token after ~40 steps (issue 58), while on AVX-512 kernels they happened to agree.
 */
async function generateInLockstep(generations: Generation[], count: number): Promise<Token[][]> {
    const live = new Set(generations);
    while (live.size > 0) {
        const stepping = [...live];
        const results = await Promise.all(stepping.map(async (generation) => ({ generation, result: await generation.evaluation.next() })));
        for (const { generation, result } of results) {
            if (result.done === true) {
                live.delete(generation);
                continue;
            }
            generation.tokens.push(result.value);
            if (generation.tokens.length >= count || model.isEogToken(result.value)) {
                await generation.evaluation.return();
                live.delete(generation);
            }
        }
    }
    return generations.map((generation) => generation.tokens);
}

describe("sampling inside the decode job (node-llama-cpp's rebuilt addon)", () => {
    it("is built on the patched addon (npm install rebuilds it; scripts/patch-node-llama-cpp.js prints why not), not on the prebuilt one", () => {
        assert.equal(samplesInsideDecode(context), testAddon === "patched");
    });

    it("gives the tokens node-llama-cpp's own sampling job gives, with penalties, on two sequences in one batch", { skip: needsPatchedAddon("decodeBatchAndSample") }, async () => {
        const run = async (): Promise<Token[][]> => generateInLockstep(
            [await startGeneration(first, "The weather today is", 11), await startGeneration(second, "Once upon a time", 12)],
            48
        );
        sampleInsideDecode(false);
        const reference = await run();
        sampleInsideDecode(true);
        const inside = await run();
        assert.equal(reference[0]!.length, 48);
        assert.deepEqual(inside, reference);
        // Two seeds, two prompts: the comparison would not notice one sequence given the other's tokens.
        assert.notDeepEqual(inside[0], inside[1]);
    });

    it("gives the same tokens under a grammar chosen per token", { skip: needsPatchedAddon("decodeBatchAndSample") }, async () => {
        sampleInsideDecode(false);
        const reference = await generate(first, "Say something:", 5, 24, { grammar: true });
        sampleInsideDecode(true);
        const inside = await generate(first, "Say something:", 5, 24, { grammar: true });
        assert.ok(reference.length > 1);
        assert.deepEqual(inside, reference);
        assert.match(model.detokenize(inside), /^[a-z ]+\.?$/);
    });
});

// scripts/patch-node-llama-cpp.js also makes a sequence's token list grow in place instead of
// being copied at every decoded token; what callers see must not change.
describe("a sequence's tokens, appended in place (node-llama-cpp's patched JS)", () => {
    it("hold the prompt and every token decoded after it, across several evaluations", async () => {
        const prompt = model.tokenize("The weather today is", true);
        const generated = await generate(first, "The weather today is", 3, 20);
        // The last generated token is sampled, never decoded: the sequence holds all but it.
        assert.deepEqual(first.contextTokens, [...prompt, ...generated.slice(0, -1)]);

        const snapshot = first.contextTokens;
        const internal = (first as unknown as { _contextTokens: Token[] })._contextTokens;
        const more: Token[] = [];
        for await (const token of first.evaluate([generated.at(-1)!], { temperature: 0 })) {
            more.push(token);
            if (more.length >= 5) break;
        }
        assert.deepEqual(snapshot, [...prompt, ...generated.slice(0, -1)], "a copy handed out earlier does not grow with the sequence");
        assert.deepEqual(first.contextTokens, [...prompt, ...generated, ...more.slice(0, -1)]);
        assert.equal(first.nextTokenIndex, first.contextTokens.length);
        assert.equal((first as unknown as { _contextTokens: Token[] })._contextTokens, internal, "the patch is applied: the list grew without being replaced");
    });
});

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { LlamaContext, LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import { decodeLoop } from "../../src/engine/decodeLoop.js";
import { DirectSteps } from "../../src/engine/directSteps.js";
import { openLlama } from "../../src/engine/openLlama.js";
import { SamplingAdapters } from "../../src/engine/samplingAdapters.js";
import { StepBarrier } from "../../src/engine/stepBarrier.js";
import type { SamplingOptions } from "../../src/engine/types.js";
import { resolveModel } from "../../src/models/resolveModel.js";
import { needsPatchedAddon, testAddon } from "../helpers/addon.js";
import { testModelsDir } from "../helpers/testServer.js";
import { waitFor } from "../helpers/waitFor.js";

// A plain generation (no grammar, no logprobs) steps through the addon directly after its prompt
// (src/engine/directSteps.ts). These tests run the same seeded generations through Maple's decode
// loop with and without it, over the very same batches, and require the very same tokens, and
// the sequence's own count of what it holds to match what was decoded.

let model: LlamaModel;
let context: LlamaContext;
let sequences: LlamaContextSequence[];
let adapters: SamplingAdapters;
let direct: DirectSteps;
let directStepCount = 0;

before(async () => {
    const { path } = await resolveModel("synthetic:qwen3-tiny", { modelsDir: testModelsDir });
    const llama = await openLlama(1, undefined, false);
    model = await llama.loadModel({ modelPath: path });
    context = await model.createContext({ contextSize: 2 * 512, sequences: 2, threads: 1 });
    sequences = [context.getSequence(), context.getSequence()];
    adapters = new SamplingAdapters(model, Number(model.fileInfo.tensorInfo?.find((tensor) => tensor.name === "token_embd.weight")?.dimensions[1] ?? 0));
    const steps = DirectSteps.for(context, model);
    // None on the prebuilt addon: the tests below skip there, and the first test says why.
    if (steps === undefined) return;
    direct = steps;
    // Counted, so that a comparison of one path with itself cannot pass.
    const step = direct.step.bind(direct);
    direct.step = (...args) => {
        directStepCount += 1;
        return step(...args);
    };
});
after(async () => {
    await context?.dispose();
    await model?.dispose();
});

/** Empties slot `slot` and evaluates `prompt` but its last token, so that both paths decode the same batches after it. */
async function prepare(slot: number, prompt: string): Promise<Token[]> {
    const sequence = sequences[slot]!;
    await sequence.clearHistory();
    const tokens = model.tokenize(prompt, true);
    await sequence.evaluateWithoutGeneratingNewTokens(tokens.slice(0, -1));
    return tokens;
}

/** Generates `count` tokens after the prepared `tokens` in slot `slot`, directly or through node-llama-cpp's evaluation. */
async function generate(barrier: StepBarrier, slot: number, tokens: Token[], sampling: SamplingOptions, count: number, useDirect: boolean | DirectSteps,
    stopAfter?: number, abortAfter?: number): Promise<Token[]> {
    const sequence = sequences[slot]!;
    const abort = new AbortController();
    const request = { promptTokens: tokens, sampling, maxTokens: count, signal: abort.signal };
    const generated: Token[] = [];
    const loop = decodeLoop({
        slot, sequence, model, input: tokens.slice(-1), sampling: adapters.forRequest(request, tokens, tokens.length - 1),
        maxTokens: count, signal: request.signal, barrier, direct: useDirect === true ? direct : useDirect === false ? undefined : useDirect
    });
    for await (const token of loop) {
        generated.push(token.token as Token);
        if (generated.length === stopAfter) break;
        // The request's signal, as a client that goes away aborts it: the decode loop stops by itself.
        if (generated.length === abortAfter) abort.abort();
    }
    if (abortAfter !== undefined) return generated;
    if (stopAfter !== undefined) {
        // A consumer that stops leaves the last token it was given evaluated, as a direct step does.
        assert.deepEqual(sequence.contextTokens, [...tokens, ...generated]);
        return generated;
    }
    // The sequence counts what was decoded: the prompt and every generated token but the last.
    assert.equal(sequence.nextTokenIndex, tokens.length + generated.length - 1);
    assert.deepEqual(sequence.contextTokens, [...tokens, ...generated.slice(0, -1)]);
    return generated;
}

const penalized: SamplingOptions = { temperature: 0.9, topK: 40, topP: 0.9, minP: 0.02, seed: 11, repetitionPenalty: 1.3, presencePenalty: 0.4, frequencyPenalty: 0.2 };

it("has direct steps on the patched addon only: on the prebuilt one every token goes through node-llama-cpp's evaluation", () => {
    assert.equal(DirectSteps.for(context, model) !== undefined, testAddon === "patched",
        testAddon === "patched" ? "the rebuilt addon has no steps job (decodeStepsAndSample): npm install prints why" : "the prebuilt addon has a steps job");
});

describe("direct steps (a plain generation's steps without node-llama-cpp's evaluation)", { skip: needsPatchedAddon("decodeStepsAndSample") }, () => {
    it("gives the tokens node-llama-cpp's evaluation gives, with penalties, logit bias and ignore_eos", async () => {
        const sampling: SamplingOptions = { ...penalized, ignoreEos: true, logitBias: new Map([[11, -5], [13, 3]]) };
        const prompt = "The weather today is";
        const reference = await generate(new StepBarrier(), 0, await prepare(0, prompt), sampling, 48, false);
        const before = directStepCount;
        const directly = await generate(new StepBarrier(), 0, await prepare(0, prompt), sampling, 48, true);
        assert.equal(directStepCount - before, 48);
        assert.equal(reference.length, 48);
        assert.deepEqual(directly, reference);
    });

    it("steps two generations in one batch, each with its own tokens", async () => {
        const run = async (useDirect: boolean): Promise<Token[][]> => {
            const barrier = new StepBarrier();
            const prompts = [await prepare(0, "Once upon a time"), await prepare(1, "In a galaxy far away")];
            return await Promise.all([
                generate(barrier, 0, prompts[0]!, { ...penalized, seed: 21, ignoreEos: true }, 32, useDirect),
                generate(barrier, 1, prompts[1]!, { temperature: 0.7, topK: 20, topP: 0.95, seed: 22, ignoreEos: true }, 32, useDirect)
            ]);
        };
        const reference = await run(false);
        const directly = await run(true);
        assert.deepEqual(directly, reference);
        assert.notDeepEqual(directly[0], directly[1]);
    });
});

const plain: SamplingOptions = { temperature: 0.8, topK: 30, topP: 0.9, minP: 0.05, seed: 5, ignoreEos: true };

describe("direct steps beside the rest of the engine", { skip: needsPatchedAddon("decodeStepsAndSample") }, () => {
    it("leaves the same tokens evaluated when the consumer stops", async () => {
        const prompt = "A list of colors:";
        const reference = await generate(new StepBarrier(), 0, await prepare(0, prompt), plain, 64, false, 9);
        assert.deepEqual(await generate(new StepBarrier(), 0, await prepare(0, prompt), plain, 64, true, 9), reference);
    });

    it("runs a slot's next generation as usual after an aborted one", async () => {
        const prompt = "The weather today is";
        const reference = await generate(new StepBarrier(), 0, await prepare(0, prompt), plain, 48, false);
        const barrier = new StepBarrier();
        const aborted = await generate(barrier, 0, await prepare(0, "Once upon a time"), { ...plain, seed: 45 }, 64, true, undefined, 12);
        assert.ok(aborted.length >= 12 && aborted.length < 64, `generated ${aborted.length}`);
        assert.deepEqual(await generate(barrier, 0, await prepare(0, prompt), plain, 48, true), reference);
    });

    it("steps a generation that joins beside one well into its tokens", async () => {
        const barrier = new StepBarrier();
        const before = directStepCount;
        const first = generate(barrier, 0, await prepare(0, "Once upon a time"), { ...plain, seed: 31 }, 96, true);
        await waitFor(() => (directStepCount - before >= 16 ? true : undefined), "the first generation's 16th step");
        const second = generate(barrier, 1, await prepare(1, "In a galaxy far away"), { ...plain, seed: 32 }, 32, true);
        const [a, b] = await Promise.all([first, second]);
        assert.equal(a.length, 96);
        assert.equal(b.length, 32);
    });

    it("lets exclusive work start only once no step is in flight", async () => {
        const barrier = new StepBarrier();
        const steps = DirectSteps.for(context, model)!;
        steps.settleFor(barrier);
        let stepped = 0;
        const step = steps.step.bind(steps);
        steps.step = (...args) => {
            stepped += 1;
            return step(...args);
        };
        const generation = generate(barrier, 0, await prepare(0, "Once upon a time"), { ...plain, seed: 41 }, 64, steps);
        await waitFor(() => (stepped >= 8 ? true : undefined), "the generation's 8th step");
        // Exclusive work may call llama.cpp without node-llama-cpp's lock: the step's batch must be done.
        const [atStart, atEnd] = await barrier.exclusive(async () => {
            const held = sequences[0]!.nextTokenIndex;
            await new Promise((resolve) => setTimeout(resolve, 60));
            return [held, sequences[0]!.nextTokenIndex];
        });
        assert.equal(atEnd, atStart, "nothing decoded during the exclusive work");
        assert.equal((await generation).length, 64);
    });
});

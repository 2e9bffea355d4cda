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

type RunEvent = (rows: Int32Array | undefined, ...rest: unknown[]) => void;

/**
 * DirectSteps whose steps may go on as native decode runs (as the engine's do), with its runs and
 * JS batches counted; `beforeRows(count)` runs before each event with rows reaches a run's JS
 * side (`count`: such events so far, over all runs).
 */
function withRuns(barrier: StepBarrier, beforeRows?: (count: number) => void): { steps: DirectSteps; runs: () => number; batches: () => number } {
    const steps = DirectSteps.for(context, model)!;
    const native = (context as unknown as { _ctx: Record<string, (...args: unknown[]) => unknown> })._ctx;
    let runs = 0;
    let batches = 0;
    let rowEvents = 0;
    // Counted on this instance's calls only: the native object's methods are read-only.
    const call = (name: string) => (...args: unknown[]) => native[name]!.apply(native, args);
    const counted = {
        startDecodeRun: (steps: unknown, samplers: unknown, onEvent: RunEvent, waitMs: unknown) => {
            runs += 1;
            const observed: RunEvent = (rows, ...rest) => {
                if (rows !== undefined) beforeRows?.(++rowEvents);
                onEvent(rows, ...rest);
            };
            return call("startDecodeRun")(steps, samplers, observed, waitMs);
        },
        decodeStepsAndSample: (...args: unknown[]) => { batches += 1; return call("decodeStepsAndSample")(...args); },
        decodeRunGrant: call("decodeRunGrant"), decodeRunRelease: call("decodeRunRelease"), decodeRunStop: call("decodeRunStop")
    };
    (steps as unknown as { native: unknown }).native = counted;
    steps.runWith(barrier);
    return { steps, runs: () => runs, batches: () => batches };
}

const plain: SamplingOptions = { temperature: 0.8, topK: 30, topP: 0.9, minP: 0.05, seed: 5, ignoreEos: true };

describe("native decode runs (a plain generation's steps on the addon's own thread)", { skip: needsPatchedAddon("startDecodeRun") }, () => {
    it("gives the tokens node-llama-cpp's evaluation gives, decoding past the first steps without JS", async () => {
        const prompt = "The weather today is";
        const reference = await generate(new StepBarrier(), 0, await prepare(0, prompt), plain, 48, false);
        const barrier = new StepBarrier();
        const counted = withRuns(barrier);
        const natively = await generate(barrier, 0, await prepare(0, prompt), plain, 48, counted.steps);
        assert.deepEqual(natively, reference);
        assert.equal(counted.runs(), 1);
        // The prompt's last token and the first generated one go from JS; the run takes the rest.
        assert.equal(counted.batches(), 1);
    });

    it("steps two generations in one run, each with its own tokens", async () => {
        const run = async (steps: boolean | DirectSteps, barrier: StepBarrier): Promise<Token[][]> => {
            const prompts = [await prepare(0, "Once upon a time"), await prepare(1, "In a galaxy far away")];
            return await Promise.all([
                generate(barrier, 0, prompts[0]!, { ...plain, seed: 21 }, 32, steps),
                generate(barrier, 1, prompts[1]!, { ...plain, seed: 22, temperature: 0.7 }, 24, steps)
            ]);
        };
        const reference = await run(false, new StepBarrier());
        const barrier = new StepBarrier();
        const counted = withRuns(barrier);
        const natively = await run(counted.steps, barrier);
        assert.deepEqual(natively, reference);
        assert.equal(counted.runs(), 1);
    });

    it("leaves the same tokens evaluated when the consumer stops, and runs again after", async () => {
        const prompt = "A list of colors:";
        const reference = await generate(new StepBarrier(), 0, await prepare(0, prompt), plain, 64, false, 9);
        const barrier = new StepBarrier();
        const counted = withRuns(barrier);
        assert.deepEqual(await generate(barrier, 0, await prepare(0, prompt), plain, 64, counted.steps, 9), reference);
        assert.deepEqual(await generate(barrier, 0, await prepare(0, prompt), plain, 64, counted.steps, 9), reference);
        assert.equal(counted.runs(), 2);
    });

    it("stops for a generation that joins, then runs both", async () => {
        const barrier = new StepBarrier();
        const counted = withRuns(barrier);
        const first = generate(barrier, 0, await prepare(0, "Once upon a time"), { ...plain, seed: 31 }, 96, counted.steps);
        // Joins once the first is well into its run: its prompt is evaluated beside it.
        await waitFor(() => (counted.runs() > 0 ? true : undefined), "the first generation's native decode run to start");
        const second = generate(barrier, 1, await barrier.contextWork(() => prepare(1, "In a galaxy far away")), { ...plain, seed: 32 }, 32, counted.steps);
        const [a, b] = await Promise.all([first, second]);
        assert.equal(a.length, 96);
        assert.equal(b.length, 32);
        assert.ok(counted.runs() >= 2, `runs: ${counted.runs()}`);
    });

    it("waits for a run to stop before exclusive work", async () => {
        const barrier = new StepBarrier();
        const counted = withRuns(barrier);
        const tokens = await prepare(0, "Once upon a time");
        const generation = generate(barrier, 0, tokens, { ...plain, seed: 41 }, 64, counted.steps);
        await waitFor(() => (counted.runs() > 0 ? true : undefined), "the first generation's native decode run to start");
        // Exclusive work may call llama.cpp without node-llama-cpp's lock: the run's thread must be done.
        const [atStart, atEnd] = await barrier.exclusive(async () => {
            const held = sequences[0]!.nextTokenIndex;
            await new Promise((resolve) => setTimeout(resolve, 60));
            return [held, sequences[0]!.nextTokenIndex];
        });
        assert.equal(atEnd, atStart, "nothing decoded during the exclusive work");
        const generated = await generation;
        assert.equal(generated.length, 64);
    });

    it("takes the step a stopping run decoded before its generation asked for it, instead of decoding that token again", async () => {
        const prompt = "Once upon a time";
        const reference = await generate(new StepBarrier(), 0, await prepare(0, prompt), { ...plain, seed: 43 }, 48, false);
        const barrier = new StepBarrier();
        let exclusive: Promise<void> | undefined;
        // Closed as the run's 8th step reaches JS: the generation given that token waits at the
        // barrier before it asks for its next step, which the run, credited, is already decoding.
        // (Run this way, the token was decoded twice: the sequence counted one token more than
        // was generated, and the tokens after it differed.)
        const counted = withRuns(barrier, (count) => {
            if (count === 8) exclusive = barrier.exclusive(async () => undefined);
        });
        const natively = await generate(barrier, 0, await prepare(0, prompt), { ...plain, seed: 43 }, 48, counted.steps);
        assert.ok(exclusive, "the exclusive work came during the run");
        await exclusive;
        assert.deepEqual(natively, reference);
        assert.equal(counted.runs(), 2);
    });
    it("drops the step a run took ahead for a generation whose request was aborted: the slot's next generation runs as usual", async () => {
        const prompt = "The weather today is";
        const reference = await generate(new StepBarrier(), 0, await prepare(0, prompt), plain, 48, false);
        const barrier = new StepBarrier();
        const counted = withRuns(barrier);
        // Aborted: the decode loop stops asking, while the run, credited, has decoded the next token.
        const aborted = await generate(barrier, 0, await prepare(0, "Once upon a time"), { ...plain, seed: 45 }, 64, counted.steps, undefined, 12);
        assert.ok(aborted.length >= 12 && aborted.length < 64, `generated ${aborted.length}`);
        // (That step was kept for the slot: its next generation was refused, "the decode run decoded token …".)
        assert.deepEqual(await generate(barrier, 0, await prepare(0, prompt), plain, 48, counted.steps), reference);
        assert.equal(counted.runs(), 2);
    });

    it("starts a run as the one before ends, many times over, with the same tokens", async () => {
        const prompt = "A list of colors:";
        const reference = await generate(new StepBarrier(), 0, await prepare(0, prompt), { ...plain, seed: 47 }, 96, false);
        const barrier = new StepBarrier();
        // Every 4th step stops the run for an instant of exclusive work; the next run starts as
        // soon as the generation steps again, while the ended run's thread is still finishing.
        // (The ended thread released the new run's event channel: SIGABRT, 1 in 3 files.)
        const counted = withRuns(barrier, (count) => {
            if (count % 4 === 0) void barrier.exclusive(async () => undefined);
        });
        const natively = await generate(barrier, 0, await prepare(0, prompt), { ...plain, seed: 47 }, 96, counted.steps);
        assert.deepEqual(natively, reference);
        assert.ok(counted.runs() >= 10, `runs: ${counted.runs()}`);
    });
});

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startCompletionGeneration, type GenerationPart } from "../../src/core/index.js";
import type { CompletionGenerationRequest } from "../../src/core/request.js";
import { RequestAbortedError } from "../../src/errors.js";
import { exact } from "../helpers/grammar.js";
import { greedy, loadTestModel, type TestModel } from "../helpers/testModel.js";

/** Every part `run` handed over, by choice. */
function collector(choices: number): { parts: GenerationPart[][]; onPart: (choice: number, part: GenerationPart) => void; texts: () => string[] } {
    const parts = Array.from({ length: choices }, (): GenerationPart[] => []);
    return {
        parts,
        onPart: (choice, part) => void parts[choice]!.push(part),
        texts: () => parts.map((list) => list.map((part) => (part.type === "text-delta" ? part.text : "")).join(""))
    };
}

/** The finish part of a choice, which must be its last part. */
function finishOf(parts: readonly GenerationPart[]): Extract<GenerationPart, { type: "finish" }> {
    const last = parts.at(-1);
    assert.equal(last?.type, "finish", "a choice's last part is its finish");
    assert.equal(parts.filter((part) => part.type === "finish").length, 1);
    return last as Extract<GenerationPart, { type: "finish" }>;
}

/** `Generation.run`, i.e. runChoices: the choices side by side, their parts, their summed usage and how a failure ends them. */
describe("Generation.run (runChoices) on the real engine", () => {
    let model: TestModel;
    let promptCount = 0;

    before(async () => {
        model = await loadTestModel({ slots: 2 });
    });
    after(async () => model?.dispose());

    function completion(overrides: Partial<CompletionGenerationRequest>): CompletionGenerationRequest {
        promptCount += 1;
        return {
            prompt: { text: `Prompt number ${promptCount} of the runChoices tests:` }, sampling: greedy, maxTokens: 64, stop: [], n: 1,
            logprobs: undefined, grammar: undefined, cacheKey: undefined, ...overrides
        };
    }

    it("one choice: its text in order, a finish part with the reason, the usage counting every token (logged once as a string)", async () => {
        const logged: unknown[] = [];
        const generation = await startCompletionGeneration(model, completion({ grammar: exact("Just this."), logprobs: { top: 0 } }), {
            signal: new AbortController().signal, logText: (text) => logged.push(text.output)
        });
        assert.equal(generation.choices, 1);
        const { parts, onPart, texts } = collector(1);
        const usage = await generation.run(onPart);
        assert.deepEqual(texts(), ["Just this."]);
        const finish = finishOf(parts[0]!);
        assert.equal(finish.reason, "stop");
        assert.deepEqual(finish.usage, usage);
        assert.equal(usage.promptTokens, generation.promptTokens);
        assert.equal(usage.reasoningTokens, 0);
        assert.equal(usage.completionTokens, parts[0]!.filter((part) => part.type === "logprobs").length, "one logprobs part per generated token");
        assert.deepEqual(logged, ["Just this."]);
        assert.equal(model.scheduler.active, 0);
    });

    it("n = 2 with a stop string: each choice cut there, one prompt counted, completion tokens summed, outputs logged as a list", async () => {
        const logged: unknown[] = [];
        const generation = await startCompletionGeneration(model, completion({ grammar: exact("left|right"), stop: ["|"], n: 2 }), {
            signal: new AbortController().signal, logText: (text) => logged.push(text.output)
        });
        assert.equal(generation.choices, 2);
        const { parts, onPart, texts } = collector(2);
        const usage = await generation.run(onPart);
        assert.deepEqual(texts(), ["left", "left"]);
        const finishes = parts.map(finishOf);
        assert.deepEqual(finishes.map((finish) => [finish.reason, finish.matchedStop]), [["stop", "|"], ["stop", "|"]]);
        assert.deepEqual(finishes.map((finish) => finish.usage.promptTokens), [generation.promptTokens, 0], "the prompt is evaluated once, counted on the first choice");
        assert.equal(usage.promptTokens, generation.promptTokens);
        assert.equal(usage.completionTokens, finishes[0]!.usage.completionTokens + finishes[1]!.usage.completionTokens);
        assert.equal(usage.cachedTokens, finishes[0]!.usage.cachedTokens);
        assert.deepEqual(logged, [["left", "left"]]);
    });

    it("max tokens: finish reason length on every choice, max tokens each", async () => {
        const generation = await startCompletionGeneration(model, completion({ grammar: "root ::= \"b\"{300}", maxTokens: 4, n: 2 }), { signal: new AbortController().signal });
        const { parts, onPart, texts } = collector(2);
        const usage = await generation.run(onPart);
        assert.deepEqual(parts.map((list) => [finishOf(list).reason, finishOf(list).matchedStop, finishOf(list).usage.completionTokens]), [["length", null, 4], ["length", null, 4]]);
        assert.equal(usage.completionTokens, 8);
        for (const text of texts()) assert.match(text, /^b+$/);
    });

    it("an abort mid-generation rejects with RequestAbortedError, sends no finish, and frees every slot", async () => {
        const controller = new AbortController();
        const generation = await startCompletionGeneration(model, completion({ grammar: "root ::= \"a\"{1500}", maxTokens: 1000, n: 2 }), { signal: controller.signal });
        const { parts } = collector(2);
        const run = generation.run((choice, part) => {
            parts[choice]!.push(part);
            if (parts[0]!.length + parts[1]!.length === 4) controller.abort();
        });
        await assert.rejects(run, RequestAbortedError);
        assert.ok(parts.flat().every((part) => part.type !== "finish"), "no choice finished");
        assert.equal(model.scheduler.active, 0);
    });

    it("a failing consumer: the other choice is cancelled and run rejects with the failure, not the cancellation", async () => {
        const generation = await startCompletionGeneration(model, completion({ grammar: "root ::= \"a\"{1500}", maxTokens: 1000, n: 2 }), { signal: new AbortController().signal });
        const failure = new Error("the client's socket broke");
        const { parts } = collector(2);
        const run = generation.run((choice, part) => {
            parts[choice]!.push(part);
            if (choice === 1 && parts[1]!.length === 2) throw failure;
        });
        await assert.rejects(run, (error) => error === failure);
        assert.ok(parts[0]!.every((part) => part.type !== "finish"), "the other choice did not run to its end");
        assert.equal(model.scheduler.active, 0);
    });

    it("close() before run gives the slots back", async () => {
        const generation = await startCompletionGeneration(model, completion({ grammar: exact("x"), n: 2 }), { signal: new AbortController().signal });
        assert.equal(model.scheduler.active, 2);
        generation.close();
        assert.equal(model.scheduler.active, 0);
    });
});

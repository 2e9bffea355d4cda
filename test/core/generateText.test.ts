import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { GeneratedToken } from "../../src/engine/types.js";
import { RequestAbortedError } from "../../src/errors.js";
import {
    startTextGeneration, startTextGenerations, type GenerationCounts, type GenerationSummary, type TextGeneration, type TextGenerationRequest
} from "../../src/core/generateText.js";
import { exact } from "../helpers/grammar.js";
import { greedy, loadTestModel, type TestModel } from "../helpers/testModel.js";

/** What one generation gave: its text, the tokens its pieces carried, and its summary. */
interface Drained {
    text: string;
    tokens: GeneratedToken[];
    /** The tokens of `textTokens`, in order: the ones a response would report with the text. */
    textTokens: GeneratedToken[];
    summary: GenerationSummary;
}

async function drain(generation: TextGeneration): Promise<Drained> {
    const drained: Omit<Drained, "summary"> = { text: "", tokens: [], textTokens: [] };
    let next = await generation.pieces.next();
    for (; !next.done; next = await generation.pieces.next()) {
        drained.text += next.value.text;
        if (next.value.token !== undefined) drained.tokens.push(next.value.token);
        drained.textTokens.push(...next.value.textTokens);
    }
    return { ...drained, summary: next.value };
}

describe("startTextGeneration / startTextGenerations on the real engine", () => {
    let model: TestModel;
    let promptCount = 0;

    before(async () => {
        model = await loadTestModel({ slots: 2 });
    });
    after(async () => model?.dispose());

    /** A request for text forced by `gbnf`, on a prompt no earlier test used (so nothing of it is cached). */
    async function request(gbnf: string, overrides: Partial<TextGenerationRequest> = {}): Promise<TextGenerationRequest> {
        promptCount += 1;
        const promptTokens = model.engine.tokenize(`Prompt number ${promptCount} of the generateText tests:`, { addBos: true });
        const grammar = await model.engine.createGrammar(gbnf);
        return { promptTokens, sampling: { ...greedy, grammar }, maxTokens: 64, stop: [], signal: new AbortController().signal, ...overrides };
    }

    it("yields the grammar's exact text, one piece per token, and ends at the end-of-generation token with the usage counts", async () => {
        const forced = await request(exact("Hello, world! ✓"));
        const { text, tokens, textTokens, summary } = await drain(await startTextGeneration(model.engine, model.scheduler, forced));
        assert.equal(text, "Hello, world! ✓");
        assert.equal(model.engine.detokenize(tokens.map(({ token }) => token)), "Hello, world! ✓");
        assert.deepEqual(textTokens, tokens, "with no stop string every token's text is returned");
        assert.equal(summary.finishReason, "stop");
        assert.equal(typeof summary.matchedStop, "number", "the end-of-generation token's id");
        assert.deepEqual([summary.promptTokens, summary.completionTokens, summary.cachedTokens], [forced.promptTokens.length, tokens.length, 0]);
        assert.equal(model.scheduler.active, 0, "the slot is free again");
    });

    it("counts the prompt the slot already holds as cached on the next request", async () => {
        const first = await request(exact("one"));
        await drain(await startTextGeneration(model.engine, model.scheduler, first));
        const again = await drain(await startTextGeneration(model.engine, model.scheduler, { ...first, signal: new AbortController().signal }));
        assert.equal(again.text, "one");
        assert.equal(again.summary.promptTokens, first.promptTokens.length);
        assert.ok(again.summary.cachedTokens > 0 && again.summary.cachedTokens < first.promptTokens.length,
            `${again.summary.cachedTokens} of ${first.promptTokens.length} prompt tokens reused (the last is evaluated again for its logits)`);
    });

    it("cuts the text at a stop string, the stop string and all after it left out, and stops generating there", async () => {
        const forced = await request(exact("The cat sat on the mat and slept."), { stop: ["mat", "zebra"] });
        const { text, tokens, textTokens, summary } = await drain(await startTextGeneration(model.engine, model.scheduler, forced));
        assert.equal(text, "The cat sat on the ");
        assert.deepEqual([summary.finishReason, summary.matchedStop], ["stop", "mat"]);
        assert.equal(summary.completionTokens, tokens.length);
        const untilStop = model.engine.detokenize(tokens.map(({ token }) => token));
        assert.ok(untilStop.startsWith("The cat sat on the mat") && !untilStop.includes("slept"), `generation ended at the stop string: ${JSON.stringify(untilStop)}`);
        assert.equal(model.engine.detokenize(textTokens.map(({ token }) => token)), text, "the reported tokens are those of the returned text");
    });

    it("holds back text that may start a stop string, and releases it once it cannot", async () => {
        const forced = await request(exact("a wonder of the world"), { stop: ["world"] });
        const generation = await startTextGeneration(model.engine, model.scheduler, forced);
        const sent: string[] = [];
        let text = "";
        let next = await generation.pieces.next();
        for (; !next.done; next = await generation.pieces.next()) {
            text += next.value.text;
            sent.push(text);
        }
        assert.equal(text, "a wonder of the ");
        for (const soFar of sent) {
            assert.ok(!["w", "wo", "wor", "worl"].some((start) => soFar.endsWith(start)), `a possible start of the stop string was sent: ${JSON.stringify(sent)}`);
        }
        assert.deepEqual([next.value.finishReason, next.value.matchedStop], ["stop", "world"]);
    });

    it("ends with finish reason length after max tokens", async () => {
        const forced = await request("root ::= \"a\"{300}", { maxTokens: 5 });
        const { text, tokens, summary } = await drain(await startTextGeneration(model.engine, model.scheduler, forced));
        assert.deepEqual([summary.finishReason, summary.matchedStop, summary.completionTokens, tokens.length], ["length", null, 5, 5]);
        assert.match(text, /^a+$/);
        assert.equal(text, model.engine.detokenize(tokens.map(({ token }) => token)));
    });

    it("stops mid-generation when its signal aborts: pieces throw RequestAbortedError, the observer sees the counts so far, the slot is freed", async () => {
        const controller = new AbortController();
        const ended: [GenerationCounts, boolean][] = [];
        let tokensSeen = 0;
        const observer = { onFirstToken: () => (tokensSeen += 1), onToken: () => (tokensSeen += 1), onEnd: (counts: GenerationCounts, completed: boolean) => ended.push([counts, completed]) };
        const forced = await request("root ::= \"a\"{1500}", { maxTokens: 1000, signal: controller.signal, observer });
        const generation = await startTextGeneration(model.engine, model.scheduler, forced);
        for (let index = 0; index < 3; index += 1) assert.equal((await generation.pieces.next()).done, false);
        assert.equal(model.scheduler.active, 1);
        controller.abort();
        await assert.rejects(async () => {
            for (let next = await generation.pieces.next(); !next.done; next = await generation.pieces.next());
        }, RequestAbortedError);
        assert.equal(ended.length, 1);
        const [counts, completed] = ended[0]!;
        assert.equal(completed, false);
        assert.equal(counts.promptTokens, forced.promptTokens.length);
        assert.ok(counts.completionTokens >= 3 && counts.completionTokens < 1000, `${counts.completionTokens} tokens before the abort`);
        assert.equal(counts.completionTokens, tokensSeen);
        assert.equal(model.scheduler.active, 0);
    });

    it("n > 1: both slots at once, one prompt evaluation counted on the first choice only, each choice its own grammar", async () => {
        const base = await request(exact("unused"));
        const red = await model.engine.createGrammar(exact("red"));
        const blue = await model.engine.createGrammar(exact("deep blue"));
        const generations = await startTextGenerations(model.engine, model.scheduler, base, [{ grammar: () => red }, { grammar: () => blue }]);
        assert.equal(model.scheduler.active, 2, "both choices hold a slot from the start");
        const [first, second] = await Promise.all(generations.map(drain));
        assert.deepEqual([first!.text, second!.text], ["red", "deep blue"]);
        assert.deepEqual([first!.summary.promptTokens, second!.summary.promptTokens], [base.promptTokens.length, 0]);
        assert.equal(second!.summary.cachedTokens, 0);
        assert.deepEqual([first!.summary.completionTokens, second!.summary.completionTokens], [first!.tokens.length, second!.tokens.length]);
        assert.equal(model.scheduler.active, 0);
    });

    it("n > 1: cancel() on one choice stops the others at their next token", async () => {
        const base = await request("root ::= \"a\"{1500}", { maxTokens: 1000 });
        const [failing, other] = await startTextGenerations(model.engine, model.scheduler, base, [{}, {}]);
        assert.equal((await other!.pieces.next()).done, false);
        failing!.cancel();
        failing!.close();
        await assert.rejects(async () => {
            for (let next = await other!.pieces.next(); !next.done; next = await other!.pieces.next());
        }, RequestAbortedError);
        other!.close();
        assert.equal(model.scheduler.active, 0);
    });

    it("refuses at once when the signal aborted before a slot was held", async () => {
        const controller = new AbortController();
        controller.abort();
        await assert.rejects(startTextGeneration(model.engine, model.scheduler, await request(exact("x"), { signal: controller.signal })), RequestAbortedError);
        assert.equal(model.scheduler.active, 0);
    });
});

import type { ChatPrompt, ChatPromptRequest, ChatTemplateSource } from "../chatFormat/chatPrompt.js";
import { nextTurnSharedCharacters } from "../chatFormat/nextTurn.js";
import { preambleCharacters } from "../chatFormat/preamble.js";
import type { Engine, EngineGrammar, SamplingOptions } from "../engine/types.js";
import { isAbortError, ServerError } from "../errors.js";
import { startTextGenerations, type GenerationObserver, type TextGeneration, type TextGenerationRequest } from "./generateText.js";
import { answerGrammars, type AnswerConstraint, type AnswerGrammars } from "../grammar/answerGrammar.js";
import { lenientGrammarSchema } from "../grammar/clientSchema.js";
import { closeThoughtGbnf } from "../grammar/thinkingBudget.js";
import type { Scheduler } from "../scheduler/scheduler.js";
import { ChatChoice } from "./chatChoice.js";
import type { ChoiceReader } from "./choiceReader.js";
import { CompletionChoice } from "./completionChoice.js";
import { sumUsage, type GenerationPart, type Usage } from "./parts.js";
import { checkChoiceCount, checkLogitBias, checkPromptCharacters, checkPromptLength, checkPromptTokenIds, promptTokenLimit, tokenizePrompt } from "./promptChecks.js";
import { preservedTokens } from "./preservedTokens.js";
import { renderConversation } from "./renderConversation.js";
import type { PreservedTokens } from "../text/tokenTextDecoder.js";
import type { ChatGenerationRequest, CompletionGenerationRequest, GenerationSettings } from "./request.js";

/** What the core generates with: a loaded model's engine, its slots' scheduler, and its chat template. */
export interface ServingModel {
    engine: Engine;
    scheduler: Scheduler;
    chatTemplate: ChatTemplateSource;
}

/** How one request runs, beside what it asks for. */
export interface GenerationOptions {
    /** Aborts the request wherever it is: waiting for a slot, evaluating its prompt, generating. */
    signal: AbortSignal;
    /** The longest prompt, in tokens (MAPLE_MAX_PROMPT_TOKENS); always less than the context. Default: the context minus one. */
    maxPromptTokens?: number;
    /** The wire request's field holding the prompt, named by a too-long or unrenderable prompt's error. Default "messages" (chat), "prompt" (completion). */
    promptParam?: string;
    /** One observer per choice (metrics); called once per choice before generation starts. */
    observe?: () => GenerationObserver;
    /** With MAPLE_LOG_PROMPTS: the prompt and each choice's raw output, once every choice completed. */
    logText?: (text: { prompt: string | number[]; output: string | string[] }) => void;
}

/**
 * One started request: its slots are held and its prompt will be evaluated when `run` starts
 * pulling tokens. Call `run` once; or `close` to give the slots back without running.
 */
export interface Generation {
    /** The prompt's token count, exactly as usage reports it. */
    readonly promptTokens: number;
    /** Choices being generated (n). */
    readonly choices: number;
    /**
     * Runs every choice to its end, side by side (the engine steps all running generations
     * together, so choices consumed one after the other would stall), handing each part to
     * `onPart` in order (per choice; the choices' parts interleave). A returned promise is awaited
     * before that choice goes on, so a slow consumer slows generation instead of growing memory.
     * Resolves with the request's usage (the choices' summed).
     *
     * Rejects with the failure when a choice fails (the other choices are cancelled), or with
     * RequestAbortedError when `signal` aborted: the caller knows why it aborted it. The slots
     * are free however it ends.
     */
    run(onPart: (choice: number, part: GenerationPart) => void | Promise<void>): Promise<Usage>;
    /** Frees the slots (safe to call any time, and more than once); a running `run` then rejects. */
    close(): void;
}

/**
 * Starts a chat generation: renders the conversation through the model's template, tokenizes
 * it, checks it, compiles its grammars, and waits for its slots. Rejects before any token is
 * generated with a domain error (an invalid request, the context exceeded, the queue full or
 * timed out) or RequestAbortedError, so a wire format can still answer with an HTTP status.
 */
export async function startChatGeneration(model: ServingModel, request: ChatGenerationRequest, options: GenerationOptions): Promise<Generation> {
    const { engine, scheduler } = model;
    const prompt = renderConversation(model.chatTemplate, request, true, options.promptParam ?? "messages");
    const promptTokens = tokenizePrompt(engine, prompt.text, promptTokenLimit(engine, options.maxPromptTokens), options.promptParam ?? "messages");
    checkLogitBias(engine, request.sampling);
    checkChoiceCount(request.n, scheduler.slots);
    const sampling = await withClientGrammar(engine, request);
    const answer = request.answer ?? freeAnswer(request, prompt);
    const grammars = answer === undefined ? undefined : await buildAnswerGrammars(engine, answer, prompt);
    const pieces = request.logprobs === undefined ? undefined : engine;
    // A client grammar decides the whole output, thought included: no budget on top of it.
    const closeReasoning = prompt.format.grammar.closeReasoning;
    const thinkingBudget = request.thinkingBudget === undefined || request.grammar !== undefined || closeReasoning === undefined ? undefined
        : { tokens: request.thinkingBudget, closeThought: await buildGrammar(engine, closeThoughtGbnf(closeReasoning), "the thinking budget") };
    const choices = Array.from({ length: request.n }, () => new ChatChoice(prompt, grammars, request.includeReasoning, pieces, thinkingBudget));
    const nextTurn = engine.model.slidingWindow > 0 ? nextTurnPrefixes(engine, model.chatTemplate, request, prompt.text, promptTokens) : {};
    const preambleTokens = preambleTokenCount(engine, model.chatTemplate, request, prompt.text, promptTokens);
    const preserved = preservedTokens(engine, prompt.format.preservedTokens);
    return startChoices(model, { promptTokens, sampling, settings: request, prompt: prompt.text, ...nextTurn, preambleTokens, preserved }, choices, options);
}

/**
 * How many of the prompt's tokens are its shared preamble (see preambleCharacters). Undefined
 * unless the preamble's text tokenizes to exactly the prompt's first tokens (a token that
 * merges across its end would differ from session to session).
 */
function preambleTokenCount(engine: Engine, source: ChatTemplateSource, request: ChatPromptRequest, prompt: string, promptTokens: readonly number[]): number | undefined {
    const characters = preambleCharacters(source, request, prompt);
    if (characters === undefined) return undefined;
    const tokens = engine.tokenize(prompt.slice(0, characters), { specialTokens: true, addBos: true });
    return tokens.length < promptTokens.length && tokens.every((token, index) => token === promptTokens[index]) ? tokens.length : undefined;
}

/**
 * How many of the prompt's tokens the conversation's next request will repeat: a sliding-window
 * model's slot is saved there (see nextTurnSharedCharacters). Undefined when the template does
 * not tell; the engine then assumes a few tokens before the end.
 *
 * Inside a tool loop (the prompt ends with a tool result) the next request is most likely the
 * loop's next tool result, which repeats this prompt up to its answer (`nextTurnPrefix`), while
 * the user's next message, once the loop ends, repeats it only up to the loop's first answer
 * (`loopStartPrefix`): the template then hides the loop's reasoning. Saved at the loop's start
 * every turn, an agent's turn state served its next tool call only that far, and each call
 * evaluated the whole loop again.
 */
function nextTurnPrefixes(engine: Engine, source: ChatTemplateSource, request: ChatPromptRequest, prompt: string,
    promptTokens: readonly number[]): { nextTurnPrefix?: number; loopStartPrefix?: number } {
    const userTurn = tokensBefore(engine, prompt, promptTokens, nextTurnSharedCharacters(source, request, prompt, "user"));
    if (request.messages.at(-1)?.role !== "tool") return { nextTurnPrefix: userTurn };
    const loopTurn = tokensBefore(engine, prompt, promptTokens, nextTurnSharedCharacters(source, request, prompt, "toolResult"));
    if (loopTurn === undefined || userTurn === undefined || loopTurn <= userTurn) return { nextTurnPrefix: userTurn };
    return { nextTurnPrefix: loopTurn, loopStartPrefix: userTurn };
}

/**
 * How many of the prompt's tokens lie wholly before its character `characters`: counted back from
 * the end by each token's bytes, so a point inside a token (`<t` of `<think>`, where the next
 * turn renders `<tool_call>`) counts only the tokens before that one. Tokenizing the rest on its
 * own instead gave a point one token short in that case, where no saved state or checkpoint was.
 */
function tokensBefore(engine: Engine, prompt: string, promptTokens: readonly number[], characters: number | undefined): number | undefined {
    if (characters === undefined) return undefined;
    const restBytes = Buffer.byteLength(prompt.slice(characters), "utf8");
    let before = promptTokens.length;
    for (let tail = 0; tail < restBytes && before > 0;) {
        before -= 1;
        tail += engine.tokenPiece(promptTokens[before]!).bytes.length;
    }
    return before;
}

/** Starts a raw completion (no template, no parsing); resolves and rejects as `startChatGeneration`. */
export async function startCompletionGeneration(model: ServingModel, request: CompletionGenerationRequest,
    options: GenerationOptions): Promise<Generation> {
    const { engine, scheduler } = model;
    const param = options.promptParam ?? "prompt";
    const limit = promptTokenLimit(engine, options.maxPromptTokens);
    const promptTokens = "text" in request.prompt ? tokenizePrompt(engine, request.prompt.text, limit, param) : checkPromptTokenIds(engine, request.prompt.tokens, param);
    checkPromptLength(promptTokens, limit, param);
    checkLogitBias(engine, request.sampling);
    checkChoiceCount(request.n, scheduler.slots);
    const sampling = await withClientGrammar(engine, request);
    const pieces = request.logprobs === undefined ? undefined : engine;
    const choices = Array.from({ length: request.n }, () => new CompletionChoice(pieces));
    const prompt = "text" in request.prompt ? request.prompt.text : request.prompt.tokens;
    return startChoices(model, { promptTokens, sampling, settings: request, prompt }, choices, options);
}

/**
 * The prompt token count of a chat request, exactly as its generation's usage would report it
 * (rendered through the same template, tokenized the same way), without generating or waiting
 * for a slot. Only a prompt absurdly longer than the context (by characters) is refused; the
 * prompt limit is not applied, so a client can learn how far over it is.
 */
export function countChatPromptTokens(model: Pick<ServingModel, "engine" | "chatTemplate">, request: Pick<ChatGenerationRequest, "messages" | "tools" | "templateKwargs" | "reasoning">,
    options: Pick<GenerationOptions, "promptParam"> = {}): number {
    const param = options.promptParam ?? "messages";
    const prompt = renderConversation(model.chatTemplate, request, true, param);
    checkPromptCharacters(prompt.text, model.engine.runtime.contextSize, param);
    return model.engine.tokenize(prompt.text, { specialTokens: true, addBos: true }).length;
}

/** The request's sampling with its own `grammar` compiled in (an invalid one: InvalidGrammarError). */
async function withClientGrammar(engine: Engine, request: GenerationSettings): Promise<SamplingOptions> {
    return request.grammar === undefined ? request.sampling : { ...request.sampling, grammar: await engine.createGrammar(request.grammar) };
}

/**
 * What the model family itself enforces on an answer the request leaves free (see
 * `ChatFormat.freeAnswer`): only with tools offered and the choice left to the model, and never
 * under a client's `grammar`, which decides the whole output.
 */
function freeAnswer(request: ChatGenerationRequest, prompt: ChatPrompt): AnswerConstraint | undefined {
    if (prompt.format.freeAnswer === undefined || request.grammar !== undefined || request.toolChoice.type !== "auto" || prompt.tools.length === 0) return undefined;
    const tools = prompt.tools.map((tool) => ({ name: tool.name, parameters: lenientGrammarSchema(tool.parameters) }));
    return prompt.format.freeAnswer({ tools, parallel: request.parallelToolCalls });
}

/** The grammars of a JSON answer or enforced tool calls; one that does not compile is Maple's fault (a server error). */
async function buildAnswerGrammars(engine: Engine, answer: AnswerConstraint, prompt: ChatPrompt): Promise<AnswerGrammars<EngineGrammar>> {
    try {
        return await answerGrammars(engine, answer, prompt, prompt.format.grammar);
    } catch (error) {
        throw new ServerError("The grammar for response_format or tool_choice could not be built.", error);
    }
}

/** A grammar Maple wrote itself: one that does not compile is Maple's fault (a server error). */
async function buildGrammar(engine: Engine, gbnf: string, what: string): Promise<EngineGrammar> {
    try {
        return await engine.createGrammar(gbnf);
    } catch (error) {
        throw new ServerError(`The grammar for ${what} could not be built.`, error);
    }
}

async function startChoices(model: ServingModel,
    start: {
        promptTokens: number[]; sampling: SamplingOptions; settings: GenerationSettings; prompt: string | number[]; nextTurnPrefix?: number; loopStartPrefix?: number;
        preambleTokens?: number; preserved?: PreservedTokens;
    },
    choices: readonly ChoiceReader[], options: GenerationOptions): Promise<Generation> {
    const { settings } = start;
    const request: TextGenerationRequest = {
        promptTokens: start.promptTokens, sampling: start.sampling, maxTokens: settings.maxTokens, stop: settings.stop,
        signal: options.signal, logprobs: settings.logprobs, cacheKey: settings.cacheKey, nextTurnPrefix: start.nextTurnPrefix,
        loopStartPrefix: start.loopStartPrefix, preambleTokens: start.preambleTokens, preservedTokens: start.preserved
    };
    const generations = await startTextGenerations(model.engine, model.scheduler, request,
        choices.map((choice) => ({ grammar: choice.grammar, observer: options.observe?.() })));
    const logText = options.logText;
    return {
        promptTokens: start.promptTokens.length,
        choices: choices.length,
        run: (onPart) => runChoices(generations, choices, onPart, logText === undefined ? undefined : (output) => logText({ prompt: start.prompt, output })),
        close: () => generations.forEach((generation) => generation.close())
    };
}

/** When one choice fails the others are cancelled, and the error thrown is the failure rather than the cancellations it caused. */
async function runChoices(generations: readonly TextGeneration[], choices: readonly ChoiceReader[],
    onPart: (choice: number, part: GenerationPart) => void | Promise<void>, logText: ((output: string | string[]) => void) | undefined): Promise<Usage> {
    const outputs = generations.map((): string[] => []);
    const results = await Promise.allSettled(generations.map(async (generation, index): Promise<Usage> => {
        const choice = choices[index]!;
        const emit = async (parts: GenerationPart[]): Promise<void> => {
            for (const part of parts) {
                const consumed = onPart(index, part);
                if (consumed !== undefined) await consumed;
            }
        };
        try {
            let next = await generation.pieces.next();
            for (; !next.done; next = await generation.pieces.next()) {
                // Read before the next token is pulled: the parser picks that token's grammar.
                await emit(choice.read(next.value));
                if (logText !== undefined) outputs[index]!.push(next.value.text);
            }
            const end = choice.end(next.value);
            await emit(end.held);
            await onPart(index, end.finish);
            return end.finish.usage;
        } catch (error) {
            generation.cancel();
            throw error;
        } finally {
            generation.close();
        }
    }));
    const failures = results.flatMap((result) => (result.status === "rejected" ? [result.reason as unknown] : []));
    if (failures.length > 0) throw failures.find((failure) => !isAbortError(failure)) ?? failures[0];
    if (logText !== undefined) {
        const texts = outputs.map((output) => output.join(""));
        logText(texts.length === 1 ? texts[0]! : texts);
    }
    return sumUsage(results.map((result) => (result as PromiseFulfilledResult<Usage>).value));
}

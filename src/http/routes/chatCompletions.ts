import type { FastifyInstance } from "fastify";
import type { ChatPrompt } from "../../chat/chatPrompt.js";
import { answerGrammars, answerGrammarSelector, type AnswerConstraint, type AnswerGrammars } from "../../chat/answerGrammar.js";
import { ChatOutputParser } from "../../chat/outputParser.js";
import type { OutputPart } from "../../chat/types.js";
import { ServerError } from "../../errors.js";
import type { Engine, GrammarSelector } from "../../engine/types.js";
import { startTextGenerations, type GeneratedPiece } from "../../generation/generateText.js";
import { parseChatRequest } from "../../openai/chatRequest.js";
import { chatCompletion, ChatChunkWriter, ChatMessageCollector, type ChatCompletionIdentity } from "../../openai/chatResponse.js";
import { newId, unixSeconds } from "../../openai/ids.js";
import { renderConversation } from "../../openai/renderConversation.js";
import { toChatLogprob, type TokenPieces, type WireChatLogprob } from "../../openai/logprobs.js";
import { checkLogitBias, promptTokenLimit, tokenizePrompt } from "../../openai/promptTokens.js";
import { checkChoiceCount } from "../../openai/sampling.js";
import { sumCounts } from "../../openai/usage.js";
import { collectGenerations, streamGenerations } from "../generationResponse.js";
import { requestCancellation } from "../requestSignal.js";
import type { RouteContext } from "./routeContext.js";

/** The grammars of `response_format` / an enforced `tool_choice`; one that does not compile is Maple's fault (500). */
async function buildAnswerGrammars(engine: Engine, answer: AnswerConstraint, prompt: ChatPrompt): Promise<AnswerGrammars> {
    try {
        return await answerGrammars(engine, answer, prompt);
    } catch (error) {
        throw new ServerError("The grammar for response_format or tool_choice could not be built.", error);
    }
}

/**
 * One choice of a chat request: its output parser (whose state also picks the answer's grammar
 * for each token), its reasoning-token count, and, with `logprobs`, the entries of the tokens not
 * yet sent.
 */
class ChatChoice {
    readonly parser: ChatOutputParser;
    readonly grammar: GrammarSelector | undefined;
    reasoningTokens = 0;
    private logprobs: WireChatLogprob[] = [];

    /** `pieces`: given when the request wants logprobs. */
    constructor(prompt: ChatPrompt, grammars: AnswerGrammars | undefined, private readonly includeReasoning: boolean,
        private readonly pieces: TokenPieces | undefined) {
        this.parser = new ChatOutputParser({ startsInReasoning: prompt.startsInReasoning, parseToolCalls: prompt.parseToolCalls });
        this.grammar = grammars === undefined ? undefined : answerGrammarSelector(this.parser, grammars);
    }

    /**
     * Parses one piece. A token counts as reasoning when it arrives while the model's think block
     * is open; its logprobs are kept (vLLM reports every generated token's, reasoning included)
     * unless the reasoning is not sent (`include_reasoning: false`).
     */
    parse(piece: GeneratedPiece): OutputPart[] {
        const reasoning = this.parser.inReasoning;
        if (piece.token !== undefined && reasoning) this.reasoningTokens += 1;
        // The tokens whose text this piece begins: those past a stop string's cut never come.
        if (this.pieces !== undefined && (this.includeReasoning || !reasoning)) {
            for (const token of piece.textTokens) this.logprobs.push(toChatLogprob(this.pieces, token));
        }
        return this.parser.push(piece.text);
    }

    peekLogprobs(): WireChatLogprob[] | undefined {
        return this.pieces === undefined ? undefined : this.logprobs;
    }

    takeLogprobs(): WireChatLogprob[] | undefined {
        if (this.pieces === undefined) return undefined;
        const taken = this.logprobs;
        this.logprobs = [];
        return taken;
    }
}

/** POST /v1/chat/completions: the model's own template, the reasoning split, tool calls, streaming. */
export function chatCompletionsRoute(app: FastifyInstance, context: RouteContext): void {
    app.post("/v1/chat/completions", async (request, reply) => {
        const { engine, scheduler, chatTemplate, systemFingerprint } = context.host.requireReady();
        // First, so a client that leaves during any await below still cancels its request.
        const cancellation = requestCancellation(request, reply, context.shutdownSignal);
        const chat = parseChatRequest(request.body, context.samplingDefaults);
        const model = context.checkModel(chat.model);
        const prompt = renderConversation(chatTemplate, chat);
        const promptTokens = tokenizePrompt(engine, prompt.text, promptTokenLimit(engine, context.config.maxPromptTokens), "messages");
        checkLogitBias(engine, chat.sampling);
        checkChoiceCount(chat.n, scheduler.slots);
        const sampling = chat.grammar === undefined ? chat.sampling : { ...chat.sampling, grammar: await engine.createGrammar(chat.grammar) };
        const grammars = chat.answer === undefined ? undefined : await buildAnswerGrammars(engine, chat.answer, prompt);
        const textLog = context.config.logPrompts ? { request, prompt: prompt.text } : undefined;
        const pieces = chat.logprobs === undefined ? undefined : engine;
        const choices = Array.from({ length: chat.n }, () => new ChatChoice(prompt, grammars, chat.includeReasoning, pieces));
        const generations = await startTextGenerations(engine, scheduler, {
            promptTokens, sampling, maxTokens: chat.maxTokens, stop: chat.stop, signal: cancellation.signal, logprobs: chat.logprobs
        }, choices.map((choice) => ({ grammar: choice.grammar, observer: context.metrics.observeGeneration() })));
        const identity: ChatCompletionIdentity = {
            id: newId("chatcmpl"), created: unixSeconds(), model,
            weightVersion: context.config.weightVersion, includeReasoning: chat.includeReasoning,
            systemFingerprint, includeUsage: chat.stream && chat.includeUsage
        };
        const reasoningTokens = (): number => choices.reduce((sum, choice) => sum + choice.reasoningTokens, 0);

        if (!chat.stream) {
            const collectors = choices.map((_, index) => new ChatMessageCollector(identity, index));
            const add = (index: number, parts: OutputPart[]): void => {
                const collector = collectors[index]!;
                collector.add(parts);
                for (const entry of choices[index]!.takeLogprobs() ?? []) collector.addLogprob(entry);
            };
            const summaries = await collectGenerations(generations, cancellation, (index, piece) => add(index, choices[index]!.parse(piece)), textLog);
            choices.forEach((choice, index) => add(index, choice.parser.flush()));
            const wireChoices = collectors.map((collector, index) => collector.choice(summaries[index]!, chat.logprobs !== undefined));
            return chatCompletion(identity, wireChoices, sumCounts(summaries), reasoningTokens());
        }
        const writers = choices.map((_, index) => new ChatChunkWriter(identity, index));
        // A chunk carries the logprobs of the tokens whose text it is the first to carry.
        const chunks = (index: number, parts: OutputPart[]): Record<string, unknown>[] => {
            const made = writers[index]!.parts(parts, choices[index]!.peekLogprobs());
            if (made.length > 0) choices[index]!.takeLogprobs();
            return made;
        };
        await streamGenerations(request, reply, cancellation, generations, {
            start: () => writers.map((writer) => writer.first()),
            piece: (index, piece) => chunks(index, choices[index]!.parse(piece)),
            end: (index, summary) => [
                ...chunks(index, choices[index]!.parser.flush()),
                writers[index]!.finish(summary, choices[index]!.takeLogprobs())
            ],
            done: (summaries) => (chat.includeUsage ? [writers[0]!.usage(sumCounts(summaries), reasoningTokens())] : [])
        }, textLog);
    });
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { anthropicError } from "../../anthropic/errorBody.js";
import { MessageBuilder, MessageEventWriter, newMessageId, pingEvent, type MessagesEvent } from "../../anthropic/messageEvents.js";
import { parseMessagesPrompt, parseMessagesRequest, type MessagesRequest } from "../../anthropic/messagesRequest.js";
import { closeThoughtGbnf, thinkingBudgetSelector } from "../../anthropic/thinkingBudget.js";
import { answerGrammars, answerGrammarSelector, type AnswerGrammars } from "../../chat/answerGrammar.js";
import type { ChatPrompt } from "../../chat/chatPrompt.js";
import { ChatOutputParser } from "../../chat/outputParser.js";
import type { OutputPart } from "../../chat/types.js";
import type { EngineGrammar, GrammarSelector } from "../../engine/types.js";
import { isAbortError, RequestAbortedError, ServerError, ShuttingDownError } from "../../errors.js";
import { startTextGenerations, type GeneratedPiece, type GenerationSummary, type TextGeneration } from "../../generation/generateText.js";
import { checkLogitBias, checkPromptCharacters, promptTokenLimit, tokenizePrompt } from "../../openai/promptTokens.js";
import { renderConversation } from "../../openai/renderConversation.js";
import { toMapleError } from "../errorHandler.js";
import { requestCancellation, type RequestCancellation } from "../requestSignal.js";
import { SseStream } from "../sse.js";
import type { RouteContext } from "./routeContext.js";

/** How often a stream still evaluating its prompt says it is alive. */
const pingIntervalMs = 5_000;

/** One generation's parser, reasoning-token count and per-token grammar (answer constraint, thinking budget). */
class MessagesChoice {
    readonly parser: ChatOutputParser;
    readonly grammar: GrammarSelector | undefined;
    reasoningTokens = 0;

    constructor(prompt: ChatPrompt, grammars: AnswerGrammars | undefined, budget: { tokens: number; close: EngineGrammar } | undefined) {
        this.parser = new ChatOutputParser({ startsInReasoning: prompt.startsInReasoning, parseToolCalls: prompt.parseToolCalls });
        const answer = grammars === undefined ? undefined : answerGrammarSelector(this.parser, grammars);
        this.grammar = budget === undefined ? answer : thinkingBudgetSelector(this, budget.tokens, budget.close, answer);
    }

    get inReasoning(): boolean {
        return this.parser.inReasoning;
    }

    parse(piece: GeneratedPiece): OutputPart[] {
        if (piece.token !== undefined && this.parser.inReasoning) this.reasoningTokens += 1;
        return this.parser.push(piece.text);
    }
}

function anthropicErrorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
    if (isAbortError(error)) {
        void reply.code(499).send();
        return;
    }
    const mapped = toMapleError(error);
    if (mapped.status >= 500 && mapped.code === null) request.log.error({ err: error }, "request failed");
    else request.log.info({ status: mapped.status, code: mapped.code, param: mapped.param }, mapped.message);
    const answer = anthropicError(mapped);
    void reply.code(answer.status).headers(answer.headers).type("application/json").send(answer.body);
}

async function run(generation: TextGeneration, choice: MessagesChoice, onParts: (parts: OutputPart[], first: boolean) => Promise<void> | void): Promise<GenerationSummary> {
    try {
        let next = await generation.pieces.next();
        let first = true;
        for (; !next.done; next = await generation.pieces.next()) {
            await onParts(choice.parse(next.value), first);
            first = false;
        }
        await onParts(choice.parser.flush(), first);
        return next.value;
    } finally {
        generation.close();
    }
}

function abortError(cancellation: RequestCancellation): Error {
    return cancellation.shutdown.aborted && !cancellation.clientGone.aborted ? new ShuttingDownError() : new RequestAbortedError();
}

/** POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API, its errors in its own shape. */
export function messagesRoutes(app: FastifyInstance, context: RouteContext): void {
    void app.register(async (scope) => {
        scope.setErrorHandler(anthropicErrorHandler);

        scope.post("/v1/messages", async (request, reply) => {
            const { engine, scheduler, chatTemplate } = context.host.requireReady();
            const cancellation = requestCancellation(request, reply, context.shutdownSignal);
            const messages = parseMessagesRequest(request.body, context.samplingDefaults);
            const model = context.checkModel(messages.model);
            const prompt = renderConversation(chatTemplate, messages);
            const promptTokens = tokenizePrompt(engine, prompt.text, promptTokenLimit(engine, context.config.maxPromptTokens), "messages");
            checkLogitBias(engine, messages.sampling);
            const sampling = messages.grammar === undefined ? messages.sampling : { ...messages.sampling, grammar: await engine.createGrammar(messages.grammar) };
            const grammars = messages.answer === undefined ? undefined : await answerGrammars(engine, messages.answer, prompt).catch((error: unknown) => {
                throw new ServerError("The grammar for tool_choice could not be built.", error);
            });
            const budget = messages.thinkingBudget === undefined || messages.grammar !== undefined
                ? undefined : { tokens: messages.thinkingBudget, close: await engine.createGrammar(closeThoughtGbnf) };
            const choice = new MessagesChoice(prompt, grammars, budget);
            const [generation] = await startTextGenerations(engine, scheduler, {
                promptTokens, sampling, maxTokens: messages.maxTokens, stop: messages.stop, signal: cancellation.signal
            }, [{ grammar: choice.grammar, observer: context.metrics.observeGeneration() }]);
            const writer = new MessageEventWriter({ id: newMessageId(), model, omitThinking: messages.omitThinking });
            const end = (summary: GenerationSummary): MessagesEvent[] => writer.finish({ ...summary, reasoningTokens: choice.reasoningTokens });
            const start = writer.start({ promptTokens: promptTokens.length, cachedTokens: 0 });
            if (!messages.stream) {
                const builder = new MessageBuilder();
                builder.add(start);
                try {
                    const summary = await run(generation!, choice, (parts) => builder.add(writer.parts(parts)));
                    builder.add(end(summary));
                } catch (error) {
                    if (isAbortError(error)) throw abortError(cancellation);
                    throw error;
                }
                return builder.build();
            }
            return stream(request, reply, cancellation, generation!, choice, writer, start, end, messages);
        });

        scope.post("/v1/messages/count_tokens", async (request) => {
            const { engine, chatTemplate } = context.host.requireReady();
            const prompt = parseMessagesPrompt(request.body);
            context.checkModel(prompt.model);
            const text = renderConversation(chatTemplate, prompt).text;
            checkPromptCharacters(text, engine.runtime.contextSize, "messages");
            return { input_tokens: engine.tokenize(text, { specialTokens: true, addBos: true }).length };
        });
    });
}

async function stream(request: FastifyRequest, reply: FastifyReply, cancellation: RequestCancellation, generation: TextGeneration, choice: MessagesChoice,
    writer: MessageEventWriter, start: MessagesEvent[], end: (summary: GenerationSummary) => MessagesEvent[], _messages: MessagesRequest): Promise<void> {
    const sse = new SseStream(reply);
    const sendAll = async (events: MessagesEvent[]): Promise<void> => {
        for (const { event, data } of events) await sse.sendNamed(event, data);
    };
    let pinging: NodeJS.Timeout | undefined;
    try {
        await sendAll([...start, pingEvent()]);
        pinging = setInterval(() => void sendAll([pingEvent()]), pingIntervalMs);
        const summary = await run(generation, choice, async (parts) => {
            clearInterval(pinging);
            await sendAll(writer.parts(parts));
        });
        await sendAll(end(summary));
        sse.end();
    } catch (error) {
        clearInterval(pinging);
        if (cancellation.clientGone.aborted) {
            sse.end();
            return;
        }
        const failure = isAbortError(error) ? abortError(cancellation) : error;
        if (!(failure instanceof ShuttingDownError)) request.log.error({ err: error }, "generation failed mid-stream");
        const answer = anthropicError(toMapleError(failure));
        await sse.sendNamed("error", answer.body);
        sse.end();
    } finally {
        clearInterval(pinging);
        generation.close();
    }
}

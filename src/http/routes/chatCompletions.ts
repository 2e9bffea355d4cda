import type { FastifyInstance } from "fastify";
import { buildChatPrompt, type ChatPrompt } from "../../chat/chatPrompt.js";
import { ChatOutputParser } from "../../chat/outputParser.js";
import { TemplateRenderError } from "../../chat/template.js";
import type { OutputPart } from "../../chat/types.js";
import { InvalidRequestError, ServerError } from "../../errors.js";
import { startTextGeneration } from "../../generation/generateText.js";
import { parseChatRequest, type ChatRequest } from "../../openai/chatRequest.js";
import { ChatChunkWriter, ChatMessageCollector, type ChatCompletionIdentity } from "../../openai/chatResponse.js";
import { newId, unixSeconds } from "../../openai/ids.js";
import { checkPromptLength, promptTokenLimit, tokenizePrompt } from "../../openai/promptTokens.js";
import type { ChatTemplateSource } from "../../chat/chatPrompt.js";
import { collectGeneration, streamGeneration } from "../generationResponse.js";
import { clientGoneSignal } from "../requestSignal.js";
import type { RouteContext } from "./routeContext.js";

/** A template that raises on this conversation is the request's fault (400); one that does not parse is ours (500). */
function renderPrompt(source: ChatTemplateSource, chat: ChatRequest): ChatPrompt {
    try {
        return buildChatPrompt(source, chat);
    } catch (error) {
        if (error instanceof TemplateRenderError && error.phase === "render") {
            throw new InvalidRequestError(`The chat template rejected this conversation: ${error.message}`, "messages");
        }
        throw new ServerError("The model's chat template could not be used.", error);
    }
}

/** POST /v1/chat/completions: the model's own template, the reasoning split, tool calls, streaming. */
export function chatCompletionsRoute(app: FastifyInstance, context: RouteContext): void {
    app.post("/v1/chat/completions", async (request, reply) => {
        const { engine, scheduler, chatTemplate } = context.host.requireReady();
        const chat = parseChatRequest(request.body, context.samplingDefaults);
        const model = context.checkModel(chat.model);
        const prompt = renderPrompt(chatTemplate, chat);
        const promptTokens = tokenizePrompt(engine, prompt.text);
        checkPromptLength(promptTokens, promptTokenLimit(engine, context.config.maxPromptTokens), "messages");
        const sampling = chat.grammar === undefined ? chat.sampling : { ...chat.sampling, grammar: await engine.createGrammar(chat.grammar) };
        const signal = clientGoneSignal(request, reply);
        const generation = await startTextGeneration(engine, scheduler, {
            promptTokens, sampling, maxTokens: chat.maxTokens, stop: chat.stop, signal
        });
        const identity: ChatCompletionIdentity = {
            id: newId("chatcmpl"), created: unixSeconds(), model,
            weightVersion: context.config.weightVersion, includeReasoning: chat.includeReasoning
        };
        const parser = new ChatOutputParser({ startsInReasoning: prompt.startsInReasoning, parseToolCalls: prompt.parseToolCalls });
        let reasoningTokens = 0;

        // A token counts as reasoning when it arrives while the model's think block is open.
        const parse = (text: string): OutputPart[] => {
            if (parser.inReasoning) reasoningTokens += 1;
            return parser.push(text);
        };

        if (!chat.stream) {
            const collector = new ChatMessageCollector(identity);
            const summary = await collectGeneration(generation, (text) => collector.add(parse(text)));
            collector.add(parser.flush());
            return collector.response(summary, reasoningTokens);
        }
        const writer = new ChatChunkWriter(identity);
        await streamGeneration(request, reply, signal, generation, {
            start: () => [writer.first()],
            text: (text) => writer.parts(parse(text)),
            end: (summary) => [
                ...writer.parts(parser.flush()),
                writer.finish(summary),
                ...(chat.includeUsage ? [writer.usage(summary, reasoningTokens)] : [])
            ]
        });
    });
}

import { z } from "zod";
import { InvalidRequestError } from "../errors.js";
import { parseChatRequest, type ChatRequest } from "./chatRequest.js";
import { parseWire, type SamplingDefaults } from "../wire/index.js";

const tokenizeWire = z.object({
    model: z.string().nullish(),
    // llama-server's name for the text.
    content: z.string().nullish(),
    // vLLM's name for the same.
    prompt: z.string().nullish(),
    // Checked by the chat request's own schema, so a conversation is read exactly as a chat request reads it.
    messages: z.unknown().optional(),
    add_special: z.boolean().nullish(),
    // vLLM's name for the same.
    add_special_tokens: z.boolean().nullish(),
    add_generation_prompt: z.boolean().nullish()
}).passthrough();

/** What to tokenize: text as it is, or a conversation to render through the model's chat template. */
export type TokenizeInput =
    | { type: "text"; text: string }
    | {
        type: "chat";
        /** The conversation, tools and `chat_template_kwargs`, read as /v1/chat/completions reads them. */
        chat: ChatRequest;
        /** Append the opening of the assistant turn, as a chat request does (default true). */
        addGenerationPrompt: boolean;
    };

/** A POST /tokenize request past the edge. */
export interface TokenizeRequest {
    model: string | undefined;
    input: TokenizeInput;
    /**
     * Default true, as a completion's prompt is read: BOS is added when the model wants one, and
     * special-token text such as `<|im_start|>` becomes its token. False: neither.
     */
    addSpecial: boolean;
}

const inputFields = ["content", "prompt", "messages"] as const;

/** Tokenizing generates nothing: no conversation key to read. */
const noHeaders = {};

/**
 * Reads /tokenize's body: exactly one of `content` (llama-server), `prompt` (vLLM) or `messages`
 * (with optional `tools`, `tool_choice`, `chat_template_kwargs`, `add_generation_prompt`).
 */
export function parseTokenizeRequest(body: unknown, defaults: SamplingDefaults): TokenizeRequest {
    const wire = parseWire(tokenizeWire, body);
    const given = inputFields.filter((field) => wire[field] != null);
    if (given.length === 0) {
        throw new InvalidRequestError("Send the text to tokenize as 'content' or 'prompt', or a conversation as 'messages'.", "content");
    }
    if (given.length > 1) {
        throw new InvalidRequestError(`Send only one of 'content', 'prompt' and 'messages'; this request has ${given.map((field) => `'${field}'`).join(" and ")}.`, given[1]!);
    }
    const addSpecial = wire.add_special ?? wire.add_special_tokens ?? true;
    const model = wire.model ?? undefined;
    if (wire.content != null) return { model, addSpecial, input: { type: "text", text: wire.content } };
    if (wire.prompt != null) return { model, addSpecial, input: { type: "text", text: wire.prompt } };
    return { model, addSpecial, input: { type: "chat", chat: parseChatRequest(body, noHeaders, defaults), addGenerationPrompt: wire.add_generation_prompt ?? true } };
}

const detokenizeWire = z.object({
    model: z.string().nullish(),
    tokens: z.array(z.number().int())
}).passthrough();

/** A POST /detokenize request past the edge; the ids are not yet checked against the vocabulary. */
export interface DetokenizeRequest {
    model: string | undefined;
    tokens: number[];
}

export function parseDetokenizeRequest(body: unknown): DetokenizeRequest {
    const wire = parseWire(detokenizeWire, body);
    return { model: wire.model ?? undefined, tokens: wire.tokens };
}

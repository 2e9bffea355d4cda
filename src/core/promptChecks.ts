import { ContextLengthExceededError, InvalidRequestError } from "../errors.js";
import type { Engine, SamplingOptions } from "../engine/types.js";

/** The longest prompt a request may send: MAPLE_MAX_PROMPT_TOKENS, and always room for one generated token. */
export function promptTokenLimit(engine: Engine, maxPromptTokens: number | undefined): number {
    const contextLimit = engine.runtime.contextSize - 1;
    return Math.min(maxPromptTokens ?? contextLimit, contextLimit);
}

/** What a client whose prompt is too long can ask the server's operator for. */
const raiseLimitHint = "Shorten it, or start Maple with a larger MAPLE_CONTEXT_SIZE (--context-size, per slot; "
    + "or MAPLE_MAX_PROMPT_TOKENS, when that is set lower).";

/**
 * Characters per token beyond which a prompt is over its token limit without tokenizing it. Real
 * text averages 3–5; llama.cpp's tokenizer blocks the event loop for time quadratic in the number
 * of special tokens in the text (measured: 391 KB of `<|im_end|>` took 2.45 s), so an absurd body
 * is refused before it reaches the tokenizer.
 */
const maxCharactersPerToken = 32;

/** Refuses text that cannot fit `limit` tokens, before the tokenizer sees it. */
export function checkPromptCharacters(text: string, limit: number, param: string): void {
    if (text.length > limit * maxCharactersPerToken) {
        throw new ContextLengthExceededError(
            `This model's maximum prompt length is ${limit} tokens; your prompt has ${text.length} characters, far more than that. ${raiseLimitHint}`, param);
    }
}

/**
 * Tokenizes prompt text as llama-server does (special tokens in the text are parsed, BOS added
 * when the model wants one), then checks it against the prompt limit (context_length_exceeded).
 */
export function tokenizePrompt(engine: Engine, text: string, limit: number, param: string): number[] {
    checkPromptCharacters(text, limit, param);
    const tokens = engine.tokenize(text, { specialTokens: true, addBos: true });
    checkPromptLength(tokens, limit, param);
    return tokens;
}

/** Token ids from the client, checked against the vocabulary: llama.cpp would abort on an unknown id. */
export function checkPromptTokenIds(engine: Engine, tokens: readonly number[], param = "prompt"): number[] {
    tokens.forEach((token, index) => {
        if (!engine.isValidToken(token)) {
            throw new InvalidRequestError(
                `Token id ${token} at ${param}[${index}] is outside the model's vocabulary (0 to ${engine.model.vocabularySize - 1}).`, param);
        }
    });
    return [...tokens];
}

export function checkPromptLength(tokens: readonly number[], limit: number, param: string): void {
    if (tokens.length > limit) {
        throw new ContextLengthExceededError(
            `This model's maximum prompt length is ${limit} tokens; your prompt has ${tokens.length} tokens. ${raiseLimitHint}`, param);
    }
}

/** n > 1 choices run side by side, one slot each: more than the server's slots is an invalid request naming `n`. */
export function checkChoiceCount(n: number, slots: number): void {
    if (n > slots) {
        throw new InvalidRequestError(`n is ${n}, but this server generates at most ${slots} choices at once (MAPLE_PARALLEL slots).`, "n");
    }
}

/** `logit_bias` keys are token ids: each must be in the vocabulary (an invalid request naming `logit_bias`). */
export function checkLogitBias(engine: Pick<Engine, "isValidToken" | "model">, sampling: SamplingOptions): void {
    for (const token of sampling.logitBias?.keys() ?? []) {
        if (!engine.isValidToken(token)) {
            throw new InvalidRequestError(
                `logit_bias names token id ${token}, which is outside the model's vocabulary (0 to ${engine.model.vocabularySize - 1}).`, "logit_bias");
        }
    }
}

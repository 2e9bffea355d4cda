import { ContextLengthExceededError, InvalidRequestError } from "../errors.js";
import type { Engine, SamplingOptions } from "../engine/types.js";

/** The longest prompt a request may send: MAPLE_MAX_PROMPT_TOKENS, and always room for one generated token. */
export function promptTokenLimit(engine: Engine, maxPromptTokens: number | undefined): number {
    const contextLimit = engine.runtime.contextSize - 1;
    return Math.min(maxPromptTokens ?? contextLimit, contextLimit);
}

/** Tokenizes prompt text as llama-server does: special tokens in the text are parsed, BOS added when the model wants one. */
export function tokenizePrompt(engine: Engine, text: string): number[] {
    return engine.tokenize(text, { specialTokens: true, addBos: true });
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
            `This model's maximum prompt length is ${limit} tokens; your prompt has ${tokens.length} tokens. Shorten it.`, param);
    }
}

/** `logit_bias` keys are token ids: each must be in the vocabulary (400 naming `logit_bias`). */
export function checkLogitBias(engine: Pick<Engine, "isValidToken" | "model">, sampling: SamplingOptions): void {
    for (const token of sampling.logitBias?.keys() ?? []) {
        if (!engine.isValidToken(token)) {
            throw new InvalidRequestError(
                `logit_bias names token id ${token}, which is outside the model's vocabulary (0 to ${engine.model.vocabularySize - 1}).`, "logit_bias");
        }
    }
}

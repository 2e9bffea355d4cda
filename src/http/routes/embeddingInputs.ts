import type { EmbeddingEngine } from "../../engine/embeddingEngine.js";
import { InvalidRequestError } from "../../errors.js";

/** Token ids as given, each checked against the embedding model's vocabulary. */
export function checkEmbeddingTokens(embedder: EmbeddingEngine, tokens: readonly number[]): number[] {
    const invalid = tokens.find((token) => !embedder.isValidToken(token));
    if (invalid !== undefined) throw new InvalidRequestError(`Token id ${invalid} is not in the model's vocabulary (0–${embedder.model.vocabularySize - 1}).`, "input");
    return [...tokens];
}

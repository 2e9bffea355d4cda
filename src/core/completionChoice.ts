import type { GeneratedPiece, GenerationSummary } from "./generateText.js";
import type { ChoiceReader } from "./choiceReader.js";
import type { FinishPart, GenerationPart } from "./parts.js";
import { tokenLogprobs, type TokenPieces } from "./tokenLogprobs.js";

/** One choice of a raw completion: the text as generated, no parsing. */
export class CompletionChoice implements ChoiceReader {
    readonly grammar = undefined;

    /** `pieces`: given when the request wants logprobs. */
    constructor(private readonly pieces: TokenPieces | undefined) {}

    read(piece: GeneratedPiece): GenerationPart[] {
        const parts: GenerationPart[] = [];
        // The tokens whose text this piece begins: those past a stop string's cut never come.
        if (this.pieces !== undefined) for (const token of piece.textTokens) parts.push({ type: "logprobs", token: tokenLogprobs(this.pieces, token) });
        if (piece.text !== "") parts.push({ type: "text-delta", text: piece.text });
        return parts;
    }

    end(summary: GenerationSummary): { held: GenerationPart[]; finish: FinishPart } {
        return { held: [], finish: {
            type: "finish",
            reason: summary.finishReason,
            matchedStop: summary.matchedStop,
            toolCalls: 0,
            usage: { promptTokens: summary.promptTokens, cachedTokens: summary.cachedTokens, completionTokens: summary.completionTokens, reasoningTokens: 0 }
        } };
    }
}

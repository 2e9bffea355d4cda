import type { GeneratedPiece, GenerationSummary } from "./generateText.js";
import type { GrammarSelector } from "../engine/types.js";
import type { FinishPart, GenerationPart } from "./parts.js";

/**
 * Turns one choice's generated pieces into parts. `read` runs before the next token is sampled,
 * so state it keeps (the output parser) is current when `grammar` picks that token's grammar.
 */
export interface ChoiceReader {
    /** Picks each token's grammar (an answer-only constraint); undefined: none of its own. */
    readonly grammar: GrammarSelector | undefined;
    /** The parts one generated piece decided (often none while text is held). */
    read(piece: GeneratedPiece): GenerationPart[];
    /** The generation ended: the parts still held, and the choice's `finish`. */
    end(summary: GenerationSummary): { held: GenerationPart[]; finish: FinishPart };
}

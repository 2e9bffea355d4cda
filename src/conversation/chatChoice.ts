import type { ChatPrompt } from "../chat/chatPrompt.js";
import { ChatOutputParser } from "../chat/outputParser.js";
import type { OutputPart } from "../chat/types.js";
import type { EngineGrammar, GrammarSelector } from "../engine/types.js";
import type { GeneratedPiece, GenerationSummary } from "../generation/generateText.js";
import { answerGrammarSelector, type AnswerGrammars } from "../grammar/answerGrammar.js";
import type { ChoiceReader } from "./choiceReader.js";
import type { FinishPart, GenerationPart } from "./parts.js";
import { tokenLogprobs, type TokenPieces } from "./tokenLogprobs.js";

/**
 * One choice of a chat generation: its output parser (whose state also picks the answer's grammar
 * for each token), its reasoning-token count and its tool-call count.
 */
export class ChatChoice implements ChoiceReader {
    readonly grammar: GrammarSelector | undefined;
    private readonly parser: ChatOutputParser;
    private reasoningTokens = 0;
    private toolCalls = 0;

    /** `pieces`: given when the request wants logprobs. */
    constructor(prompt: ChatPrompt, grammars: AnswerGrammars<EngineGrammar> | undefined, private readonly includeReasoning: boolean,
        private readonly pieces: TokenPieces | undefined) {
        this.parser = new ChatOutputParser({ startsInReasoning: prompt.startsInReasoning, parseToolCalls: prompt.parseToolCalls });
        this.grammar = grammars === undefined ? undefined : answerGrammarSelector(this.parser, grammars);
    }

    /**
     * A token counts as reasoning when it arrives while the model's think block is open; its
     * logprobs are kept (vLLM reports every generated token's, reasoning included) unless the
     * reasoning is not sent (`includeReasoning: false`).
     */
    read(piece: GeneratedPiece): GenerationPart[] {
        const parts: GenerationPart[] = [];
        if (piece.token !== undefined) {
            const reasoning = this.parser.inReasoning;
            if (reasoning) this.reasoningTokens += 1;
            if (this.pieces !== undefined && (this.includeReasoning || !reasoning)) parts.push({ type: "logprobs", token: tokenLogprobs(this.pieces, piece.token) });
        }
        return this.convert(this.parser.push(piece.text), parts);
    }

    end(summary: GenerationSummary): { held: GenerationPart[]; finish: FinishPart } {
        const held = this.convert(this.parser.flush(), []);
        const finish: FinishPart = {
            type: "finish",
            reason: summary.finishReason,
            matchedStop: summary.matchedStop,
            toolCalls: this.toolCalls,
            usage: {
                promptTokens: summary.promptTokens,
                cachedTokens: summary.cachedTokens,
                completionTokens: summary.completionTokens,
                reasoningTokens: this.reasoningTokens
            }
        };
        return { held, finish };
    }

    private convert(parsed: readonly OutputPart[], parts: GenerationPart[]): GenerationPart[] {
        for (const part of parsed) {
            if (part.type === "reasoning") {
                if (this.includeReasoning) parts.push({ type: "reasoning-delta", text: part.text });
            } else if (part.type === "content") {
                parts.push({ type: "text-delta", text: part.text });
            } else {
                parts.push({ type: "tool-call", index: this.toolCalls, name: part.name, arguments: part.arguments });
                this.toolCalls += 1;
            }
        }
        return parts;
    }
}

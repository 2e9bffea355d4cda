import type { ChatPrompt } from "../chatFormat/chatPrompt.js";
import type { OutputParser } from "../chatFormat/formats/chatFormat.js";
import type { OutputPart } from "../chatFormat/types.js";
import type { EngineGrammar, GrammarSelector } from "../engine/types.js";
import type { GeneratedPiece, GenerationSummary } from "./generateText.js";
import { answerGrammarSelector, type AnswerGrammars } from "../grammar/answerGrammar.js";
import { thinkingBudgetSelector } from "../grammar/thinkingBudget.js";
import type { ChoiceReader } from "./choiceReader.js";
import type { FinishPart, GenerationPart } from "./parts.js";
import { tokenLogprobs, type TokenPieces } from "./tokenLogprobs.js";

/**
 * One choice of a chat generation: its output parser (whose state also picks the answer's grammar
 * for each token), its reasoning-token count and its tool-call count.
 */
export class ChatChoice implements ChoiceReader {
    readonly grammar: GrammarSelector | undefined;
    private readonly parser: OutputParser;
    private reasoningTokensSoFar = 0;
    private toolCalls = 0;

    /**
     * `pieces`: given when the request wants logprobs. `thinkingBudget`: the reasoning tokens
     * allowed, and the grammar that closes the thought once they are spent.
     */
    constructor(prompt: ChatPrompt, grammars: AnswerGrammars<EngineGrammar> | undefined, private readonly includeReasoning: boolean,
        private readonly pieces: TokenPieces | undefined, thinkingBudget?: { tokens: number; closeThought: EngineGrammar }) {
        this.parser = prompt.format.createParser({ startsInReasoning: prompt.startsInReasoning, tools: prompt.tools });
        const answer = grammars === undefined ? undefined : answerGrammarSelector(this.parser, grammars);
        this.grammar = thinkingBudget === undefined ? answer : thinkingBudgetSelector(this, thinkingBudget.tokens, thinkingBudget.closeThought, answer);
    }

    /** The model's reasoning block is open: the next token is reasoning. */
    get inReasoning(): boolean {
        return this.parser.inReasoning;
    }

    /** Tokens generated inside the think block so far. */
    get reasoningTokens(): number {
        return this.reasoningTokensSoFar;
    }

    /**
     * A token counts as reasoning when it arrives while the model's think block is open; its
     * logprobs are kept (vLLM reports every generated token's, reasoning included) unless the
     * reasoning is not sent (`includeReasoning: false`).
     */
    read(piece: GeneratedPiece): GenerationPart[] {
        const parts: GenerationPart[] = [];
        const reasoning = this.parser.inReasoning;
        if (piece.token !== undefined && reasoning) this.reasoningTokensSoFar += 1;
        // The tokens whose text this piece begins: those past a stop string's cut never come.
        if (this.pieces !== undefined && (this.includeReasoning || !reasoning)) {
            for (const token of piece.textTokens) parts.push({ type: "logprobs", token: tokenLogprobs(this.pieces, token) });
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

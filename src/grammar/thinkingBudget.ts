import type { EngineGrammar, GrammarSelector } from "../engine/types.js";
import { gbnfLiteral } from "./answerGrammar.js";

/**
 * GBNF that makes the model close its reasoning now: `closeReasoning` (the family's
 * `FormatGrammar.closeReasoning`, e.g. Qwen3's `</think>` on a line of its own, as the templates
 * write it) and then anything. The answer's own grammar, if any, takes over as soon as the parser
 * has seen the marker.
 */
export function closeThoughtGbnf(closeReasoning: string): string {
    return `root ::= ${gbnfLiteral(closeReasoning)} .*\n`;
}

/**
 * A thinking budget (Anthropic's `thinking.budget_tokens`): once the choice has generated `budget` tokens inside its think block,
 * every further token is sampled under `closeThought` until the block is closed. `inner` (the
 * answer's grammar, if any) is still consulted on every token, since it tracks whether reasoning
 * happened.
 */
export function thinkingBudgetSelector(state: { readonly inReasoning: boolean; readonly reasoningTokens: number }, budget: number,
    closeThought: EngineGrammar, inner: GrammarSelector | undefined): GrammarSelector {
    return () => {
        const chosen = inner?.();
        return state.inReasoning && state.reasoningTokens >= budget ? closeThought : chosen;
    };
}

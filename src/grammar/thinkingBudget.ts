import type { EngineGrammar, GrammarSelector } from "../engine/types.js";
import { THINK_CLOSE } from "../chatFormat/markers.js";

/**
 * GBNF that makes the model close its thought now: `</think>` (on a line of its own, as the
 * templates write it) and then anything. The answer's own grammar, if any, takes over as soon as
 * the parser has seen the marker.
 */
export const closeThoughtGbnf = `root ::= ${JSON.stringify(`\n${THINK_CLOSE}\n\n`)} .*\n`;

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

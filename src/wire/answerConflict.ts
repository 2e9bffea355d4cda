import { InvalidRequestError } from "../errors.js";
import type { AnswerConstraint } from "../grammar/answerGrammar.js";

/**
 * Maple's `grammar` decides the whole output, so it cannot sit beside an answer constraint (a
 * JSON format or an enforced tool choice). `constraints` names the wire's fields for the message,
 * e.g. "response_format or an enforced tool_choice".
 */
export function refuseGrammarWithAnswer(answer: AnswerConstraint | undefined, grammar: string | null | undefined, constraints: string): void {
    if (answer !== undefined && grammar != null) {
        throw new InvalidRequestError(`grammar cannot be combined with ${constraints}: both constrain the output.`, "grammar");
    }
}

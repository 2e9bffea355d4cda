import { THINK_CLOSE, THINK_OPEN, TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from "../chatFormat/markers.js";
import { definedRuleNames, scanGbnf } from "./gbnfScanner.js";
import { jsonValueRule } from "./jsonGrammarRules.js";
import type { GrammarJsonSchema } from "./jsonSchemaSubset.js";

/**
 * What a chat answer must be, enforced by grammar on the answer only (the reasoning before
 * `</think>` stays free): a JSON value (`response_format`), tool calls (`tool_choice` `required`
 * or a named function), or either of the two (`response_format` beside tools the model may call).
 */
export interface AnswerConstraint {
    /** The answer is one JSON value; `schema` undefined: any JSON object (`json_object`). */
    json?: { schema: GrammarJsonSchema | undefined };
    /** The answer is one or more `<tool_call>` blocks (exactly one when `parallel` is false) whose JSON is `callSchema`. */
    toolCalls?: { callSchema: GrammarJsonSchema; parallel: boolean };
}

/**
 * What building the answer's grammars needs from the engine (`Engine` implements it): compiling
 * GBNF, and the JSON rules of a schema. `Grammar` is the engine's compiled grammar.
 */
export interface GrammarCompiler<Grammar> {
    createGrammar(gbnf: string): Promise<Grammar>;
    /** GBNF defining `maple-json`: one JSON value matching `schema`, or any JSON object when undefined. */
    jsonGrammarRules(schema: GrammarJsonSchema | undefined): Promise<string>;
}

/** The grammars a chat generation switches between (see `answerGrammarSelector`). */
export interface AnswerGrammars<Grammar> {
    /** From the first token, while no reasoning happened (when the prompt opened the think block, never). */
    initial: Grammar;
    /** Started afresh once a think block closed. */
    afterReasoning: Grammar;
}

/**
 * Whitespace allowed before an answer that follows the model's own `</think>`: models write
 * "\n\n" there (the parser drops it). Bounded, so a random model cannot loop on it. An answer
 * from the first token gets none: the prompt already ends with the whitespace it needs.
 */
const leadingWhitespace = "[ \\t\\n]{0,4}";

function literal(text: string): string {
    return JSON.stringify(text);
}

/** Prefix of the tool-call JSON rules when they share a grammar with the answer's own JSON rules. */
const callRulePrefix = "call-";

/**
 * The answer's GBNF. `rules` are what `Engine.jsonGrammarRules` returned (each defines
 * `maple-json`) for the answer's JSON and for one tool call's JSON. `start`: "afterReasoning"
 * for the grammar applied after the model's `</think>`, "first token" for the one applied from
 * the first token, and "first token, or a think block" when the model may still open its think
 * block (stock Qwen3 with thinking on opens `<think>` itself): after `<think>` anything goes, and
 * `answerGrammarSelector` stops applying the grammar as soon as the parser is in reasoning.
 */
export function answerGbnf(constraint: AnswerConstraint, rules: { json?: string; toolCall?: string },
    start: "afterReasoning" | "first token" | "first token, or a think block"): string {
    const lines: string[] = [];
    const allowThinkOpen = start === "first token, or a think block";
    const body = allowThinkOpen ? `( maple-body | ${literal(THINK_OPEN)} maple-free )` : "maple-body";
    lines.push(`root ::= maple-lead ${body}`, `maple-lead ::= ${start === "afterReasoning" ? leadingWhitespace : '""'}`);
    if (allowThinkOpen) lines.push("maple-free ::= .*");
    const bodies: string[] = [];
    if (constraint.json !== undefined && rules.json !== undefined) {
        bodies.push(jsonValueRule);
        lines.push(rules.json);
    }
    if (constraint.toolCalls !== undefined && rules.toolCall !== undefined) {
        // Both rule sets come from the same converter: keep the call's apart by a prefix.
        const callJson = bodies.length > 0 ? callRulePrefix + jsonValueRule : jsonValueRule;
        // Qwen3's and Hermes' layout: each call on its own lines, calls separated by a newline.
        bodies.push(constraint.toolCalls.parallel ? "maple-call ( \"\\n\" maple-call )*" : "maple-call");
        lines.push(`maple-call ::= ${literal(`${TOOL_CALL_OPEN}\n`)} ${callJson} ${literal(`\n${TOOL_CALL_CLOSE}`)}`);
        lines.push(bodies.length > 1 ? prefixRuleNames(rules.toolCall, callRulePrefix) : rules.toolCall);
    }
    if (bodies.length === 0) throw new Error("an answer constraint needs its grammar rules");
    lines.splice(2, 0, `maple-body ::= ${bodies.map((body) => `( ${body} )`).join(" | ")}`);
    return `${lines.join("\n")}\n`;
}

/**
 * Renames every rule `gbnf` defines to `prefix` + name, references included (string literals,
 * character classes and comments are left alone).
 */
export function prefixRuleNames(gbnf: string, prefix: string): string {
    const names = definedRuleNames(gbnf);
    let renamed = "";
    for (const element of scanGbnf(gbnf)) {
        const text = gbnf.slice(element.start, element.end);
        renamed += element.kind === "name" && names.has(text) ? prefix + text : text;
    }
    return renamed;
}

/**
 * Whether the model may still open a think block itself: not when the prompt left it inside one
 * (`startsInReasoning`), nor when the prompt already closed one (`enable_thinking: false` renders
 * `<think>\n\n</think>\n\n`): then the answer is constrained from the first token.
 */
export function mayOpenThink(prompt: { text: string; startsInReasoning: boolean }): boolean {
    return !prompt.startsInReasoning && !prompt.text.trimEnd().endsWith(THINK_CLOSE);
}

/** Compiles the grammars for one request's constraint (shared by its choices; cached by the engine). */
export async function answerGrammars<Grammar>(engine: GrammarCompiler<Grammar>, constraint: AnswerConstraint,
    prompt: { text: string; startsInReasoning: boolean }): Promise<AnswerGrammars<Grammar>> {
    const rules = {
        json: constraint.json === undefined ? undefined : await engine.jsonGrammarRules(constraint.json.schema),
        toolCall: constraint.toolCalls === undefined ? undefined : await engine.jsonGrammarRules(constraint.toolCalls.callSchema)
    };
    const afterReasoning = await engine.createGrammar(answerGbnf(constraint, rules, "afterReasoning"));
    const initial = await engine.createGrammar(answerGbnf(constraint, rules, mayOpenThink(prompt) ? "first token, or a think block" : "first token"));
    return { initial, afterReasoning };
}

/**
 * The grammar of each token of one chat choice: none while the parser is in reasoning (the think
 * block stays free), `initial` while no reasoning happened, and `afterReasoning` (a fresh state,
 * see the engine's `GrammarSelector`) once a think block closed. The generation core pushes each
 * token's text into the parser before the next token is sampled, so the parser is never behind.
 */
export function answerGrammarSelector<Grammar>(parser: { readonly inReasoning: boolean }, grammars: AnswerGrammars<Grammar>): () => Grammar | undefined {
    let reasoned = false;
    return () => {
        if (parser.inReasoning) {
            reasoned = true;
            return undefined;
        }
        return reasoned ? grammars.afterReasoning : grammars.initial;
    };
}

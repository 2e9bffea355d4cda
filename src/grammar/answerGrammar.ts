import { definedRuleNames, scanGbnf } from "./gbnfScanner.js";
import { jsonValueRule } from "./jsonGrammarRules.js";
import type { GrammarJsonSchema } from "./jsonSchemaSubset.js";

/**
 * What a chat answer must be, enforced by grammar on the answer only (the reasoning stays free):
 * a JSON value (`response_format`), tool calls (`tool_choice` `required` or a named function), or
 * either of the two (`response_format` beside tools the model may call).
 */
export interface AnswerConstraint {
    /** The answer is one JSON value; `schema` undefined: any JSON object (`json_object`). */
    json?: { schema: GrammarJsonSchema | undefined };
    /** The answer is one or more tool calls (exactly one when `parallel` is false) to `tools`, in the model family's syntax. */
    toolCalls?: ToolCallsConstraint;
}

/** Tool calls the answer must be: to one of `tools`, whose arguments match its `parameters`. */
export interface ToolCallsConstraint {
    tools: readonly GrammarTool[];
    parallel: boolean;
}

/** A tool a call may name, its parameters' schema in the grammar's subset. */
export interface GrammarTool {
    name: string;
    parameters: GrammarJsonSchema;
}

/**
 * GBNF defining `PREFIX` + `maple-json`: one JSON value matching `schema` (any JSON object when
 * undefined), every rule's name prefixed, so several can share one grammar.
 */
export type JsonRules = (schema: GrammarJsonSchema | undefined, prefix: string) => Promise<string>;

/**
 * The grammar pieces of one model family's chat format (`ChatFormat.grammar`): how its answer,
 * its JSON answer and its tool calls are written, and how its reasoning opens and closes.
 */
export interface FormatGrammar {
    /** The text the model opens its reasoning with, when it may still do so first; undefined: the family has none. */
    reasoningOpen: string | undefined;
    /**
     * GBNF (an expression) for what may come between the model's own end of reasoning and its
     * answer (Qwen3: a little whitespace). The answer from the first token gets none: the prompt
     * already ends with what it needs.
     */
    afterReasoning: string;
    /**
     * GBNF (an expression) for the answer as one JSON value, the value being rule `json`;
     * `besideToolCalls`: the answer may be tool calls instead (the generic format then wraps it).
     */
    jsonAnswer(json: string, besideToolCalls: boolean): string;
    /** GBNF rules defining `maple-calls`: the tool calls the constraint asks for, in the family's syntax. */
    toolCalls(constraint: ToolCallsConstraint, rules: JsonRules): Promise<string[]>;
    /**
     * Text that ends the reasoning, forced once a thinking budget is spent (then anything may
     * follow); undefined: the family has no reasoning block, so no budget applies.
     */
    closeReasoning: string | undefined;
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
    /** From the first token, while no reasoning happened (when the prompt opened the reasoning block, never). */
    initial: Grammar;
    /** Started afresh once a reasoning block closed. */
    afterReasoning: Grammar;
}

/** A GBNF string literal of `text`. */
export function gbnfLiteral(text: string): string {
    return JSON.stringify(text);
}

/**
 * GBNF rules defining `maple-call`: one call to any of `tools`, written as `around(name)` says
 * (the text before and after the arguments), the arguments being the tool's JSON (rule prefix
 * `toolN-`). For the families that write a call's name outside its JSON arguments.
 */
export async function callPerTool(tools: readonly GrammarTool[], rules: JsonRules, around: (name: string) => [before: string, after: string]): Promise<string[]> {
    const lines = [`maple-call ::= ${tools.map((_tool, index) => `maple-call-${index}`).join(" | ")}`];
    for (const [index, tool] of tools.entries()) {
        const [before, after] = around(tool.name);
        lines.push(`maple-call-${index} ::= ${gbnfLiteral(before)} tool${index}-maple-json${after === "" ? "" : ` ${gbnfLiteral(after)}`}`);
        lines.push(await rules(tool.parameters, `tool${index}-`));
    }
    return lines;
}

/** The rules an answer needs and the alternatives it may be (each an expression). */
export interface AnswerRules {
    rules: string[];
    bodies: string[];
}

/** The rules and alternatives of a constraint in one family's syntax. */
export async function answerRules(constraint: AnswerConstraint, format: FormatGrammar, rules: JsonRules): Promise<AnswerRules> {
    const answer: AnswerRules = { rules: [], bodies: [] };
    if (constraint.json !== undefined) {
        answer.rules.push(await rules(constraint.json.schema, ""));
        answer.bodies.push(format.jsonAnswer(jsonValueRule, constraint.toolCalls !== undefined));
    }
    if (constraint.toolCalls !== undefined) {
        answer.rules.push(...await format.toolCalls(constraint.toolCalls, rules));
        answer.bodies.push("maple-calls");
    }
    if (answer.bodies.length === 0) throw new Error("an answer constraint needs a JSON answer or tool calls");
    return answer;
}

/**
 * The answer's GBNF: `lead` (GBNF) and then one of the answer's bodies. With `reasoningOpen` (the
 * model may still open its reasoning itself, as stock Qwen3 with thinking on does), the opening
 * and then anything is allowed too: `answerGrammarSelector` stops applying the grammar as soon as
 * the parser is in reasoning.
 */
export function answerGbnf(answer: AnswerRules, lead: string, reasoningOpen: string | undefined): string {
    const body = reasoningOpen === undefined ? "maple-body" : `( maple-body | ${gbnfLiteral(reasoningOpen)} maple-free )`;
    const lines = [`root ::= maple-lead ${body}`, `maple-lead ::= ${lead}`, `maple-body ::= ${answer.bodies.map((item) => `( ${item} )`).join(" | ")}`];
    if (reasoningOpen !== undefined) lines.push("maple-free ::= .*");
    return `${[...lines, ...answer.rules].join("\n")}\n`;
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
 * Compiles the grammars for one request's constraint in the model family's syntax (shared by its
 * choices; cached by the engine). `prompt.mayOpenReasoning`: the model may open its reasoning
 * before the answer (see `PromptStart`).
 */
export async function answerGrammars<Grammar>(engine: GrammarCompiler<Grammar>, constraint: AnswerConstraint,
    prompt: { mayOpenReasoning: boolean }, format: FormatGrammar): Promise<AnswerGrammars<Grammar>> {
    const rules: JsonRules = async (schema, prefix) => {
        const gbnf = await engine.jsonGrammarRules(schema);
        return prefix === "" ? gbnf : prefixRuleNames(gbnf, prefix);
    };
    const answer = await answerRules(constraint, format, rules);
    const afterReasoning = await engine.createGrammar(answerGbnf(answer, format.afterReasoning, undefined));
    const initial = await engine.createGrammar(answerGbnf(answer, '""', prompt.mayOpenReasoning ? format.reasoningOpen : undefined));
    return { initial, afterReasoning };
}

/**
 * The grammar of each token of one chat choice: none while the parser is in reasoning (the
 * reasoning stays free), `initial` while no reasoning happened, and `afterReasoning` (a fresh state,
 * see the engine's `GrammarSelector`) once a reasoning block closed. The generation core pushes each
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

import { gbnfLiteral } from "../../grammar/answerGrammar.js";
import { toGrammarSchema, toolCallGrammarSchema } from "../../grammar/jsonSchemaSubset.js";
import { MarkerOutputParser } from "../outputParser.js";
import { templateCapabilities } from "../templateCapabilities.js";
import { toTemplateMessages, toTemplateTools, type TemplateMessage } from "../templateMessages.js";
import type { ChatMessage, OutputPart, ToolDefinition } from "../types.js";
import { blockPromptStart, enableThinkingVariables } from "./blockFamily.js";
import type { ChatFormat, OutputParser, OutputParserOptions } from "./chatFormat.js";
import { THINK_CLOSE, THINK_OPEN, thinkBlock } from "./hermes.js";
import { JsonEnvelopeReader } from "./jsonEnvelope.js";

/**
 * The generic format, for templates that do not show the tools to the model (Gemma 2 / 3, Phi):
 * llama.cpp's `common_chat_params_init_generic` with minja's polyfills, before its automatic
 * parser replaced them. When tools are offered, the format itself tells the model about them (in
 * the system message) and the whole answer is one JSON object, enforced by grammar:
 * `{"tool_calls": [{"name", "arguments"}, …]}` or `{"response": "…"}`. Without tools it is plain
 * text, as before. Past calls and results go back to the template as that JSON, in assistant and
 * user turns (such templates render no tool calls or tool role either).
 *
 * One departure from llama.cpp: calls are always the `tool_calls` list (one item when parallel
 * calls are off, where llama.cpp switched to a singular `tool_call`), so the instructions, the
 * history and the grammar show the model one shape; `tool_call` is still read.
 */

/** What the model is told when tools are offered (llama.cpp's sentence, then minja's tool list and example). */
export function toolInstructions(tools: readonly ToolDefinition[]): string {
    const example = { tool_calls: [{ name: "tool_name", arguments: { arg1: "some_value" } }] };
    return "Respond in JSON format, either with `tool_calls` (a request to call tools) or with `response` (your reply to the user's request).\n\n"
        + `You can call any of the following tools to satisfy the user's requests: ${JSON.stringify(toTemplateTools(tools), null, 2)}\n\n`
        + `Example tool call syntax:\n\n${JSON.stringify(example, null, 2)}`;
}

/**
 * The conversation as a template without tools reads it: the tool instructions merged into the
 * first system message (or a new one: minja's `add_system`); assistant calls as the JSON the model
 * writes, `{"tool_calls": […], "content"?}`; each run of tool results as one user turn of
 * `{"tool_response": {…}}` objects (minja's polyfill, with consecutive results in one turn so
 * templates that insist on alternating roles, Gemma's, accept parallel calls); and, where the
 * template renders no system message (Gemma 2 raises on one), system text folded into the first
 * user turn (minja's system polyfill).
 */
export function genericTemplateMessages(messages: readonly ChatMessage[], template: string, tools: readonly ToolDefinition[]): TemplateMessage[] {
    let conversation = [...messages];
    if (tools.length > 0) {
        const first = conversation[0];
        const instructions = toolInstructions(tools);
        conversation = first?.role === "system"
            ? [{ role: "system", content: `${first.content}\n\n${instructions}` }, ...conversation.slice(1)]
            : [{ role: "system", content: instructions }, ...conversation];
    }
    const converted = withToolTurnsAsJson(conversation);
    return templateCapabilities(template).rendersSystem ? toTemplateMessages(converted, false) : toTemplateMessages(foldSystem(converted), false);
}

function withToolTurnsAsJson(messages: readonly ChatMessage[]): ChatMessage[] {
    const names = new Map<string, string>();
    const result: ChatMessage[] = [];
    let results: string[] = [];
    const endResults = (): void => {
        if (results.length > 0) result.push({ role: "user", content: results.join("\n") });
        results = [];
    };
    for (const message of messages) {
        if (message.role === "tool") {
            const name = message.name ?? (message.toolCallId === undefined ? undefined : names.get(message.toolCallId));
            const response = { ...(name === undefined ? {} : { tool: name }), content: message.content, ...(message.toolCallId === undefined ? {} : { tool_call_id: message.toolCallId }) };
            results.push(JSON.stringify({ tool_response: response }, null, 2));
            continue;
        }
        endResults();
        if (message.role !== "assistant" || message.toolCalls === undefined || message.toolCalls.length === 0) {
            result.push(message);
            continue;
        }
        for (const call of message.toolCalls) names.set(call.id, call.name);
        const calls = message.toolCalls.map((call) => ({ name: call.name, arguments: parsedArguments(call.arguments), id: call.id }));
        const turn = { tool_calls: calls, ...(message.content === null || message.content === "" ? {} : { content: message.content }) };
        result.push({ role: "assistant", content: JSON.stringify(turn, null, 2) });
    }
    endResults();
    return result;
}

function parsedArguments(text: string): unknown {
    try {
        return JSON.parse(text) as unknown;
    } catch {
        return text;
    }
}

/** System (and developer) text joined into the next user turn's start; at the end, a user turn of its own. */
function foldSystem(messages: readonly ChatMessage[]): ChatMessage[] {
    const result: ChatMessage[] = [];
    let pending: string[] = [];
    for (const message of messages) {
        if (message.role === "system" || message.role === "developer") {
            pending.push(message.content);
            continue;
        }
        if (pending.length > 0 && message.role === "user") {
            result.push({ role: "user", content: [...pending, message.content].join("\n\n") });
        } else {
            if (pending.length > 0) result.push({ role: "user", content: pending.join("\n\n") });
            result.push(message);
        }
        pending = [];
    }
    if (pending.length > 0) result.push({ role: "user", content: pending.join("\n\n") });
    return result;
}

/** Reads `<think>` as Hermes does (should a model write one unforced), then the answer's JSON when tools were offered. */
class GenericOutputParser implements OutputParser {
    readonly #text: MarkerOutputParser;
    readonly #envelope: JsonEnvelopeReader | undefined;

    constructor(options: OutputParserOptions) {
        this.#text = new MarkerOutputParser({ reasoning: thinkBlock, toolBlocks: [] }, { startsInReasoning: options.startsInReasoning, tools: [] });
        this.#envelope = options.tools.length > 0 ? new JsonEnvelopeReader() : undefined;
    }

    get inReasoning(): boolean {
        return this.#text.inReasoning;
    }

    push(text: string): OutputPart[] {
        return this.#read(this.#text.push(text), false);
    }

    flush(): OutputPart[] {
        return this.#read(this.#text.flush(), true);
    }

    #read(parts: readonly OutputPart[], final: boolean): OutputPart[] {
        const envelope = this.#envelope;
        if (envelope === undefined) return [...parts];
        const read = parts.flatMap((part) => (part.type === "content" ? envelope.push(part.text) : [part]));
        return final ? [...read, ...envelope.flush()] : read;
    }
}

/** A JSON string: the free answer beside tools, `{"response": "…"}`. */
const responseString = toGrammarSchema({ type: "string" });

export const genericFormat: ChatFormat = {
    name: "generic",
    preservedTokens: [THINK_OPEN, THINK_CLOSE],
    grammar: {
        // Not offered by the grammar: these templates have no reasoning, and a model free to open
        // `<think>` under an enforced answer could think instead of answering (a random one did,
        // to the token limit). The parser still reads one a model writes unforced.
        reasoningOpen: undefined,
        afterReasoning: "[ \\t\\n]{0,4}",
        // Beside tools the JSON answer is the envelope's response; without them (no tools offered) the answer itself.
        jsonAnswer: (json, besideToolCalls) => (besideToolCalls ? `${gbnfLiteral('{"response": ')} ${json} "}"` : json),
        toolCalls: async ({ tools, parallel }, rules) => [
            `maple-calls ::= ${gbnfLiteral('{"tool_calls": [')} call-maple-json ${parallel ? '( ", " call-maple-json )* ' : ""}"]}"`,
            await rules(toolCallGrammarSchema(tools), "call-")
        ],
        closeReasoning: `\n${THINK_CLOSE}\n\n`
    },
    freeAnswer: (callable) => ({ json: { schema: responseString }, toolCalls: callable }),
    reasoningVariables: enableThinkingVariables,
    templateMessages: genericTemplateMessages,
    templateTools: toTemplateTools,
    readPrompt: (prompt) => blockPromptStart(prompt, thinkBlock),
    createParser: (options) => new GenericOutputParser(options)
};

import { callPerTool, gbnfLiteral, type FormatGrammar } from "../../grammar/answerGrammar.js";
import { oneCallPerTurn, toTemplateMessages, toTemplateTools, type TemplateMessage } from "../templateMessages.js";
import { decidedLength, IncrementalParser, type PartList } from "../incrementalParser.js";
import type { ChatMessage, ReasoningSwitch, ToolDefinition } from "../types.js";
import type { ChatFormat, OutputParserOptions } from "./chatFormat.js";

/**
 * OpenAI's harmony format (gpt-oss 20B / 120B). The model writes messages, each a header and a
 * body: `<|channel|>analysis<|message|>…<|end|>` (its reasoning),
 * `<|start|>assistant<|channel|>final<|message|>…` (the answer, ended by `<|return|>`), and tool
 * calls `<|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}`
 * (ended by `<|call|>`). `<|return|>` and `<|call|>` end the generation (llama.cpp makes them
 * end-of-generation tokens and `<|end|>` not), so the generation's text never holds them; the
 * generation prompt ends with `<|start|>assistant`.
 *
 * Followed: OpenAI's harmony guide (openai/harmony, "Receiving tool calls") and llama.cpp's gpt-oss
 * parser (`common/chat-parser.cpp` before its autoparser, `common/parsers/gpt-oss.cpp` after),
 * which also accept the recipient in the role header (`<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>`,
 * as the template renders past calls) and `<|constrain|>` left out.
 */

const START = "<|start|>";
const CHANNEL = "<|channel|>";
const MESSAGE = "<|message|>";
const END = "<|end|>";
const CALL = "<|call|>";
const RETURN = "<|return|>";
const CONSTRAIN = "<|constrain|>";

/** What ends a message's body: its end markers, or the next message's start (a model may leave `<|end|>` out). */
const bodyEnds = [END, CALL, RETURN, START] as const;
/** The longest header Maple waits for before it reads the output as plain text. */
const maxHeaderLength = 256;

/** What a message's body is, by its header. */
type BodyKind = "reasoning" | "content" | { call: string } | "dropped";

type Phase =
    /** Reading a message header, up to `<|message|>`. */
    | { type: "header" }
    /** Inside a message's body. */
    | { type: "body"; kind: BodyKind }
    /** Text where a header should be, after a message: content up to the next `<|start|>` (llama.cpp recovers there too). */
    | { type: "stray"; atBrokenHeader: boolean }
    /** The output does not start as harmony (no header where one must be): all of it is content. */
    | { type: "text" };

/**
 * Splits gpt-oss's output into reasoning (analysis messages), content (final messages and
 * commentary preambles) and tool calls (commentary messages to `functions.NAME`). Pure and
 * incremental like every format's parser: headers are never content, and a piece of a marker is
 * held back until it is decided.
 *
 * Conventions: bodies are kept verbatim (harmony has no whitespace around its markers to trim).
 * A call's body must be a JSON object (its arguments, re-serialised), else the body is content; a
 * call while no tools were offered is content too (its arguments), and a call to another function
 * than an offered tool's is still parsed (as Hermes' are). A message to another recipient (a
 * built-in tool: `browser.search`, `python`) is dropped, as llama.cpp drops these "unsolicited"
 * calls. Text where a header should be is content: all of the output when it does not start as
 * harmony, else up to the next `<|start|>` (a model forced out of its reasoning by a thinking
 * budget may write a stray character there). Reasoning is reported wherever an analysis message
 * stands, even after a commentary preamble (the turn analysis → preamble → analysis → call).
 */
export class HarmonyOutputParser extends IncrementalParser {
    readonly #options: OutputParserOptions;
    #phase: Phase;
    /** A message was read: text that is no header is stray text between messages, not plain output. */
    #readMessage = false;

    constructor(options: OutputParserOptions) {
        super();
        this.#options = { ...options };
        this.#phase = options.startsInReasoning ? { type: "body", kind: "reasoning" } : { type: "header" };
    }

    get inReasoning(): boolean {
        return this.#phase.type === "body" && this.#phase.kind === "reasoning";
    }

    protected step(parts: PartList, final: boolean): boolean {
        const phase = this.#phase;
        if (phase.type === "text") {
            const length = final ? this.pending.length : decidedLength(this.pending, [], false);
            parts.addText("content", this.pending.slice(0, length));
            this.pending = this.pending.slice(length);
            return false;
        }
        if (phase.type === "stray") return this.#stepStray(parts, phase, final);
        if (phase.type === "header") return this.#stepHeader(final);
        return this.#stepBody(parts, phase.kind, final);
    }

    #stepHeader(final: boolean): boolean {
        const end = this.pending.indexOf(MESSAGE);
        if (!couldBeHeader(end < 0 ? this.pending : this.pending.slice(0, end))) {
            this.#phase = this.#readMessage ? { type: "stray", atBrokenHeader: true } : { type: "text" };
            return true;
        }
        if (end < 0) {
            // A header cut off by the end of generation is markup, not text.
            if (final) this.pending = "";
            return false;
        }
        const header = this.pending.slice(0, end);
        this.pending = this.pending.slice(end + MESSAGE.length);
        this.#phase = { type: "body", kind: bodyKind(header, this.#options.tools) };
        this.#readMessage = true;
        return true;
    }

    #stepStray(parts: PartList, phase: { atBrokenHeader: boolean }, final: boolean): boolean {
        // The text that failed as a header may itself begin with `<|start|>`: look past it.
        const start = this.pending.indexOf(START, phase.atBrokenHeader ? 1 : 0);
        const length = start >= 0 ? start : final ? this.pending.length : decidedLength(this.pending, [START], false);
        parts.addText("content", this.pending.slice(0, length));
        this.pending = this.pending.slice(length);
        if (length > 0) phase.atBrokenHeader = false;
        if (start < 0) return false;
        this.#phase = { type: "header" };
        return true;
    }

    #stepBody(parts: PartList, kind: BodyKind, final: boolean): boolean {
        const end = firstOf(this.pending, bodyEnds);
        const streams = kind === "reasoning" || kind === "content";
        if (end === undefined && !final) {
            if (streams) {
                const length = decidedLength(this.pending, bodyEnds, false);
                parts.addText(kind, this.pending.slice(0, length));
                this.pending = this.pending.slice(length);
            }
            return false;
        }
        const body = this.pending.slice(0, end?.at ?? this.pending.length);
        // The next message's `<|start|>` stays: its header begins with it.
        this.pending = end === undefined ? "" : this.pending.slice(end.at + (end.marker === START ? 0 : end.marker.length));
        if (streams) parts.addText(kind, body);
        else if (kind !== "dropped") {
            const call = parseArguments(body);
            if (call === undefined) parts.addText("content", body);
            else parts.addToolCall({ name: kind.call, arguments: call });
        }
        this.#phase = { type: "header" };
        return end !== undefined;
    }
}

/** Whether `text` (no `<|message|>` yet) can still be, or is, a message header: markup only, short, on one line. */
function couldBeHeader(text: string): boolean {
    const header = text.trimStart();
    if (header.length > maxHeaderLength || header.includes("\n")) return false;
    return [START, CHANNEL, "to="].some((opening) => header.startsWith(opening) || opening.startsWith(header));
}

/** What a header says its body is. */
function bodyKind(header: string, tools: readonly ToolDefinition[]): BodyKind {
    const channels = [...header.matchAll(/<\|channel\|>([A-Za-z0-9_-]+)/g)];
    const channel = channels.at(-1)?.[1];
    const recipient = /(?:^|\s)to=([^\s<]+)/.exec(header)?.[1];
    if (recipient !== undefined && recipient !== "assistant") {
        if (recipient.startsWith("functions.") && recipient.length > "functions.".length) {
            return tools.length > 0 ? { call: recipient.slice("functions.".length) } : "content";
        }
        return "dropped";
    }
    return channel === "analysis" ? "reasoning" : "content";
}

/** A call's body: its arguments, re-serialised, when it is one JSON object. */
function parseArguments(body: string): string | undefined {
    try {
        const value = JSON.parse(body) as unknown;
        return typeof value === "object" && value !== null && !Array.isArray(value) ? JSON.stringify(value) : undefined;
    } catch {
        return undefined;
    }
}

function firstOf(text: string, markers: readonly string[]): { at: number; marker: string } | undefined {
    let found: { at: number; marker: string } | undefined;
    for (const marker of markers) {
        const at = text.indexOf(marker);
        if (at >= 0 && (found === undefined || at < found.at)) found = { at, marker };
    }
    return found;
}

/**
 * The conversation as gpt-oss's template reads it (llama.cpp's `common_chat_params_init_gpt_oss`
 * does the same): reasoning in `thinking` (the template renders it as the analysis message of a
 * turn that calls a tool, and drops it elsewhere), and content dropped beside it in such a turn
 * (the template refuses both). The template renders one call per assistant message (`tool_calls[0]`)
 * and names a tool result after the call before it, so a turn of several calls is split into one
 * message per call, each followed by its result (matched by `tool_call_id`, else in order).
 */
function harmonyTemplateMessages(messages: readonly ChatMessage[]): TemplateMessage[] {
    const converted: TemplateMessage[] = [];
    for (const message of oneCallPerTurn(messages)) {
        const [templateMessage] = toTemplateMessages([message], true);
        if (message.role === "assistant" && message.reasoningContent !== undefined) {
            delete templateMessage!["reasoning_content"];
            templateMessage!["thinking"] = message.reasoningContent;
            if (message.toolCalls !== undefined && message.toolCalls.length > 0) delete templateMessage!["content"];
        }
        converted.push(templateMessage!);
    }
    return converted;
}

/**
 * The template's `reasoning_effort` (low, medium, high; its default medium). gpt-oss always
 * reasons: off is its lowest effort, low.
 */
function reasoningEffort(reasoning: ReasoningSwitch | undefined): Record<string, unknown> {
    if (reasoning === undefined) return {};
    if (!reasoning.enabled) return { reasoning_effort: "low" };
    return reasoning.effort === undefined ? {} : { reasoning_effort: reasoning.effort };
}

const analysisOpening = `${CHANNEL}analysis${MESSAGE}`;

/**
 * The answer after the model's analysis starts a new message (`<|start|>assistant`); one from the
 * first token follows the prompt's own `<|start|>assistant`. A call is one commentary message to
 * `functions.NAME` with JSON arguments; gpt-oss makes one call per turn (its `<|call|>` ends the
 * generation), so `parallel` allows no more.
 */
const harmonyGrammar: FormatGrammar = {
    reasoningOpen: analysisOpening,
    afterReasoning: gbnfLiteral(`${START}assistant`),
    jsonAnswer: (json) => `${gbnfLiteral(`${CHANNEL}final${MESSAGE}`)} ${json}`,
    toolCalls: async ({ tools }, rules) => [
        "maple-calls ::= maple-call",
        ...await callPerTool(tools, rules, (name) => [`${CHANNEL}commentary to=functions.${name} ${CONSTRAIN}json${MESSAGE}`, ""])
    ],
    closeReasoning: END
};

export const harmonyFormat: ChatFormat = {
    name: "harmony",
    preservedTokens: [START, CHANNEL, MESSAGE, END, CALL, RETURN, CONSTRAIN],
    grammar: harmonyGrammar,
    reasoningVariables: reasoningEffort,
    templateMessages: (messages) => harmonyTemplateMessages(messages),
    // The template writes `"// " + tool.description`, which fails on a tool without one.
    templateTools: (tools) => toTemplateTools(tools.map((tool) => ({ description: "", ...tool }))),
    readPrompt: (prompt) => {
        const startsInReasoning = prompt.endsWith(analysisOpening);
        return { startsInReasoning, mayOpenReasoning: !startsInReasoning };
    },
    createParser: (options) => new HarmonyOutputParser(options)
};

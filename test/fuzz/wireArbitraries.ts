import fc from "fast-check";

/**
 * Generators of hostile OpenAI request bodies for the fuzz suite: every field of
 * /v1/completions and /v1/chat/completions gets plausible values and wrong ones (types, ranges,
 * sizes, encodings), a few fields at a time, so that a body often gets past the first check and
 * reaches the deeper ones (template, tokenizer, grammar, engine).
 */

/** The synthetic models' vocabulary (the real Qwen3 tokenizer): ids 0 to 151935. */
export const vocabularySize = 151_936;

/**
 * A number literal written into the JSON text as it is, for the numbers JSON.stringify cannot
 * write: `-0`, `1e400` (Infinity once parsed), `1.0`.
 */
export class RawNumber {
    constructor(readonly text: string) {}

    toJSON(): string {
        return `${rawMark}${this.text}${rawMark}`;
    }
}

const rawMark = "\u0001raw\u0001";
const rawMarked = /"\\u0001raw\\u0001([^"\\]+)\\u0001raw\\u0001"/g;

/** JSON text of a generated value, with its RawNumbers written as they are. */
export function toJsonText(value: unknown): string {
    return (JSON.stringify(value) ?? "null").replace(rawMarked, "$1");
}

/** Marks a field the body must not have at all (a required field left out). */
export const omitted: unique symbol = Symbol("omitted");
type Field = unknown;

/** True when the value holds a string (or key) with an unpaired UTF-16 surrogate. */
export function hasLoneSurrogate(value: unknown): boolean {
    if (typeof value === "string") return /\p{Cs}/u.test(value);
    if (Array.isArray(value)) return value.some(hasLoneSurrogate);
    if (value !== null && typeof value === "object" && !(value instanceof RawNumber)) {
        return Object.entries(value).some(([key, item]) => hasLoneSurrogate(key) || hasLoneSurrogate(item));
    }
    return false;
}

export const oddNumber: fc.Arbitrary<number | RawNumber> = fc.oneof(
    fc.constantFrom(0, 1, -1, 2, 4, 16, 17, 0.5, -0.5, 1.5, 2 ** 31, 2 ** 32 + 3, 2 ** 53 + 2, 1e308, -1e308, 5e-324,
        Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER),
    fc.constantFrom("-0", "1e400", "-1e400", "1.0", "1E2", "0.000", "-0.0", "1e-400", "4.0000000000000001").map((text) => new RawNumber(text)),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true })
);

/** Text a tokenizer, template or log line could choke on. */
export const oddText: fc.Arbitrary<string> = fc.oneof(
    { weight: 3, arbitrary: fc.string({ maxLength: 30 }) },
    { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 30 }) },
    { weight: 2, arbitrary: fc.string({ unit: "binary-ascii", maxLength: 30 }) },
    {
        weight: 3, arbitrary: fc.constantFrom("", " ", "NaN", "Infinity", "null", "true", "-1", "1e308", "\u0000", "a\u0000b",
            "\ud800", "x\udfffy", "\udbff\udbff", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "</think>", "<think>", "<tool_call>",
            "</tool_call>", "{{ raise_exception('boom') }}", "{% for x in y %}", "%s%n%x", "../../etc/passwd", "\r\n\r\n", "\u202e\ufeff",
            "😀".repeat(50))
    },
    { weight: 1, arbitrary: fc.constant("x".repeat(5000)) }
);

/** Any JSON value, biased towards the ones wire schemas trip on. */
export const anyValue: fc.Arbitrary<Field> = fc.oneof(
    { weight: 3, arbitrary: oddNumber },
    { weight: 3, arbitrary: oddText },
    { weight: 1, arbitrary: fc.boolean() },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
    { weight: 1, arbitrary: fc.constant({ ["__proto__"]: { polluted: true } }).map((value) => JSON.parse(JSON.stringify(value)) as Field) },
    { weight: 1, arbitrary: fc.array(oddNumber, { maxLength: 4 }) }
);

/** `plausible` values for a field, sometimes any value, sometimes no field at all. */
function field(...plausible: fc.Arbitrary<Field>[]): fc.Arbitrary<Field> {
    return fc.oneof(
        { weight: 4, arbitrary: plausible.length === 1 ? plausible[0]! : fc.oneof(...plausible) },
        { weight: 3, arbitrary: anyValue },
        { weight: 1, arbitrary: fc.constant(omitted) }
    );
}

const probability = field(fc.constantFrom(0, 0.1, 0.5, 1), fc.double({ min: -1, max: 3, noNaN: true }));

/** Grammars: valid ones, GBNF fragments glued at random, random text. */
export const grammar: fc.Arbitrary<Field> = field(
    fc.constantFrom("root ::= \"ok\"", "root ::= [a-z]+", "root ::= \"a\"{2000}", "root ::= [^\\x00-\\U0010FFFF]", "root ::= root \"a\"",
        "root ::= (\"\")*", "root ::= \"a\"{99999999}", "", "root ::= [", "root ::= x\nx ::= \"y\" | root",
        // Dead ends (no token can match): llama.cpp throws while sampling, and node-llama-cpp 3.22.1 lost that error.
        "root ::= \"\\u0000\"", "root ::= [z-a]", "root ::= \"ab\\x00\"", "root ::= [\\x00]", "root ::= [^\\x01-\\U0010FFFF]"),
    fc.array(fc.constantFrom("root", " ::= ", "\"a\"", "\"ok\"", "[a-z]", "[^x]", "*", "+", "?", "(", ")", " | ", "{2}", "{0,3}",
        "{2000}", "{2,2000}", "x", "\n", "# comment", "\"\\", "[^", "]", "{", "}", " ", "::=", "\\x00", "\\U0010FFFF", "ws ::= [ \\t]*",
        "ws", ".", "\"\\u0000\""), { maxLength: 14 }).map((pieces) => pieces.join("")),
    fc.string({ maxLength: 40 })
);

/** The sampling and length fields both generation routes share. */
export const samplingFields: Record<string, fc.Arbitrary<Field>> = {
    model: field(fc.constantFrom("maple-preview", "gpt-4o", ""), oddText),
    temperature: field(fc.constantFrom(0, 0.7, 2), fc.double({ min: -1, max: 3, noNaN: true })),
    top_p: probability,
    top_k: field(fc.constantFrom(-1, 0, 1, 40, vocabularySize, 2 ** 31), fc.integer({ min: -5, max: 300_000 })),
    min_p: probability,
    repetition_penalty: field(fc.constantFrom(0, 1, 1.1, 10, 11), fc.double({ min: -1, max: 12, noNaN: true })),
    presence_penalty: field(fc.double({ min: -3, max: 3, noNaN: true })),
    frequency_penalty: field(fc.double({ min: -3, max: 3, noNaN: true })),
    seed: field(fc.integer(), fc.constantFrom(-1, 2 ** 32, 2 ** 53 + 2, 1e308)),
    max_tokens: field(fc.constantFrom(1, 2, 4, 1e308), fc.integer({ min: -2, max: 8 })),
    stop: field(oddText, fc.array(fc.string({ maxLength: 4 }), { maxLength: 40 }), fc.array(oddText, { maxLength: 18 })),
    stream: field(fc.boolean()),
    stream_options: field(fc.record({ include_usage: field(fc.boolean()) }, { requiredKeys: [] })),
    grammar,
    ignore_eos: field(fc.boolean()),
    logit_bias: field(fc.dictionary(fc.oneof(fc.constantFrom("0", "1", "151935", "151936", "-1", "1.5", "abc", ""), fc.nat().map(String)),
        fc.oneof(fc.constantFrom(-100, 100, 0, -101, 101), oddNumber), { maxKeys: 4 })),
    user: anyValue
};

const tokenId: fc.Arbitrary<Field> = fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: 0, max: vocabularySize - 1 }) },
    { weight: 2, arbitrary: fc.constantFrom(-1, vocabularySize, vocabularySize + 64, 2 ** 31, 2 ** 32, 1e308, 0.5, 3.25) },
    { weight: 1, arbitrary: oddNumber },
    { weight: 1, arbitrary: oddText }
);

/** "word " is one token of the Qwen3 tokenizer: 1200 of them are past the test server's 1024-token context. */
export const promptPastContext = "word ".repeat(1200);

export const completionFields: Record<string, fc.Arbitrary<Field>> = {
    ...samplingFields,
    prompt: field(
        oddText,
        fc.array(oddText, { maxLength: 3 }),
        fc.array(tokenId, { maxLength: 8 }),
        fc.array(fc.array(tokenId, { maxLength: 4 }), { maxLength: 3 }),
        fc.array(fc.oneof(oddText, tokenId), { maxLength: 4 }),
        fc.constantFrom(promptPastContext, [promptPastContext], Array.from({ length: 1100 }, () => 1000), [[1, 2], [3]], ["a", "b"], [[]], [""])
    ),
    echo: field(fc.boolean()),
    suffix: field(oddText),
    logprobs: field(fc.constantFrom(0, 1, 5, 6)),
    n: field(fc.constantFrom(1, 2, 4, 5, 64)),
    best_of: field(fc.constantFrom(1, 2, 4))
};

const role = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom("system", "developer", "user", "assistant", "tool") },
    { weight: 1, arbitrary: fc.constantFrom("function", "bot", "", "USER", "model", "ipython") },
    { weight: 1, arbitrary: anyValue }
);

const contentPart = fc.oneof(
    fc.record({ type: fc.constant("text"), text: field(oddText) }, { requiredKeys: ["type"] }),
    fc.record({ type: fc.constantFrom("image_url", "input_audio", "file", "refusal", "video"), image_url: anyValue }, { requiredKeys: ["type"] }),
    fc.record({ type: anyValue, text: oddText }, { requiredKeys: [] }),
    anyValue
);

const content = fc.oneof(
    { weight: 5, arbitrary: oddText },
    { weight: 2, arbitrary: fc.array(contentPart, { maxLength: 3 }) },
    { weight: 1, arbitrary: anyValue },
    { weight: 1, arbitrary: fc.constant(omitted) }
);

const toolArguments = field(
    fc.constantFrom("{", "{oops", "[]", "null", "\"s\"", "  ", "", "{}", "{\"city\":\"Lagos\"}", "1", "{\"a\":{\"b\":[1,2,{}]}}"),
    fc.json({ maxDepth: 2 }),
    fc.string({ maxLength: 20 })
);

const toolCall = fc.oneof(
    {
        weight: 4, arbitrary: fc.record({
            id: field(fc.constantFrom("call_1", "call_2"), oddText),
            type: field(fc.constant("function")),
            function: field(fc.record({ name: field(fc.constantFrom("get_weather", "f"), oddText), arguments: toolArguments }, { requiredKeys: [] }))
        }, { requiredKeys: [] })
    },
    { weight: 1, arbitrary: anyValue }
);

const message = fc.oneof(
    {
        weight: 8, arbitrary: fc.record({
            role,
            content,
            name: field(oddText),
            tool_calls: field(fc.array(toolCall, { maxLength: 3 })),
            tool_call_id: field(fc.constantFrom("call_1", "call_2", "call_3"), oddText),
            reasoning_content: field(oddText)
        }, { requiredKeys: ["role"] })
    },
    { weight: 1, arbitrary: anyValue }
);

/** JSON schemas, plausible and not: they become grammars for response_format and an enforced tool_choice. */
const schema: fc.Arbitrary<Field> = fc.letrec<{ schema: Field }>((tie) => ({
    schema: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        fc.constant({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }),
        fc.record({
            type: field(fc.constantFrom("object", "string", "number", "integer", "boolean", "array", "null", "date"), fc.array(fc.constantFrom("string", "null"))),
            properties: field(fc.dictionary(fc.oneof(oddText, fc.constantFrom("a", "b")), tie("schema"), { maxKeys: 3 })),
            required: field(fc.array(fc.oneof(oddText, fc.constantFrom("a", "b")), { maxLength: 3 })),
            items: tie("schema"),
            enum: field(fc.array(fc.oneof(oddText, oddNumber, fc.constant(null)), { maxLength: 3 })),
            const: field(oddText, oddNumber),
            pattern: field(oddText, fc.constantFrom("^[a-z]+$", "(", "\\d{3}")),
            minLength: field(fc.integer({ min: -1, max: 5 })),
            maxLength: field(fc.integer({ min: -1, max: 5 })),
            minimum: field(oddNumber),
            anyOf: field(fc.array(tie("schema"), { maxLength: 2 })),
            additionalProperties: field(fc.boolean(), tie("schema")),
            $ref: field(fc.constantFrom("#", "#/definitions/x", "http://example.com/s.json"))
        }, { requiredKeys: [] }),
        anyValue
    )
})).schema;

const tool = fc.oneof(
    {
        weight: 4, arbitrary: fc.record({
            type: field(fc.constant("function")),
            function: field(fc.record({
                name: field(fc.constantFrom("get_weather", "f", "x".repeat(65)), oddText),
                description: field(oddText),
                parameters: schema,
                strict: field(fc.boolean())
            }, { requiredKeys: ["name"] }))
        }, { requiredKeys: ["type", "function"] })
    },
    { weight: 1, arbitrary: anyValue }
);

/** A conversation through a tool call, with ids that sometimes match and sometimes do not. */
const toolConversation = fc.tuple(
    fc.array(fc.constantFrom("call_1", "call_2"), { minLength: 1, maxLength: 2 }),
    fc.array(fc.constantFrom("call_1", "call_2", "call_3"), { minLength: 1, maxLength: 3 }),
    toolArguments
).map(([calls, answers, args]) => [
    { role: "user", content: "Weather?" },
    { role: "assistant", content: null, tool_calls: calls.map((id) => ({ id, type: "function", function: { name: "get_weather", arguments: args } })) },
    ...answers.map((id) => ({ role: "tool", tool_call_id: id, content: "31°C" }))
]);

export const chatFields: Record<string, fc.Arbitrary<Field>> = {
    ...samplingFields,
    messages: field(
        fc.array(message, { minLength: 1, maxLength: 5 }),
        toolConversation,
        fc.constantFrom([], [{ role: "user", content: promptPastContext }])
    ),
    tools: field(fc.array(tool, { maxLength: 3 })),
    tool_choice: field(
        fc.constantFrom("none", "auto", "required", "required", "get_weather"),
        fc.record({ type: field(fc.constant("function")), function: field(fc.record({ name: field(fc.constantFrom("get_weather", "f", "nope")) })) })
    ),
    parallel_tool_calls: field(fc.boolean()),
    max_completion_tokens: field(fc.constantFrom(1, 2, 4), fc.integer({ min: -2, max: 8 })),
    chat_template_kwargs: field(
        fc.record({ enable_thinking: field(fc.boolean()) }, { requiredKeys: [] }),
        fc.dictionary(fc.constantFrom("enable_thinking", "messages", "tools", "add_generation_prompt", "bos_token", "eos_token",
            "raise_exception", "tool_choice", "documents", "custom"), anyValue, { maxKeys: 3 })
    ),
    include_reasoning: field(fc.boolean()),
    n: field(fc.constantFrom(1, 2, 4, 5, 64)),
    logprobs: field(fc.boolean()),
    top_logprobs: field(fc.constantFrom(0, 5, 20, 21)),
    response_format: field(
        fc.record({ type: field(fc.constantFrom("text", "json_object", "json_schema")) }),
        fc.record({
            type: fc.constant("json_schema"),
            json_schema: field(fc.record({ name: field(fc.constantFrom("answer"), oddText), schema, strict: field(fc.boolean()) }, { requiredKeys: [] }))
        })
    )
};

/**
 * A valid base body with at most `maxChanges` of its fields replaced (or removed), and sometimes a
 * few unknown fields: most bodies are wrong in one or two places, so they reach the later checks.
 */
export function mutatedBody(base: Record<string, unknown>, fields: Record<string, fc.Arbitrary<Field>>,
    maxChanges = 3): fc.Arbitrary<Record<string, unknown>> {
    const names = Object.keys(fields);
    const unknownFields = fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), anyValue, { maxKeys: 2 });
    return fc.tuple(fc.subarray(names, { maxLength: maxChanges }), fc.option(unknownFields, { freq: 4, nil: {} }))
        .chain(([chosen, unknown]) => fc.tuple(...chosen.map((name) => fields[name]!)).map((values) => {
            const body: Record<string, unknown> = { ...unknown, ...base };
            chosen.forEach((name, index) => {
                const value = values[index];
                if (value === omitted) delete body[name];
                else body[name] = value;
            });
            return body;
        }));
}

/** Where a JSON text is cut, corrupted or wrapped: the text is valid JSON before. */
export type TextDamage =
    | { kind: "truncate"; at: number }
    | { kind: "invalid-utf8"; at: number; bytes: readonly number[] }
    | { kind: "raw-nul"; at: number }
    | { kind: "insert"; at: number; text: string }
    | { kind: "bom" };

/** Byte sequences that are not UTF-8: a lone continuation byte, an overlong NUL, a CESU surrogate, past U+10FFFF, a cut sequence. */
export const invalidUtf8: fc.Arbitrary<readonly number[]> = fc.constantFrom<readonly number[]>([0xff], [0xfe, 0xff], [0x80], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0xf8, 0x88, 0x80, 0x80, 0x80]);

export const textDamage: fc.Arbitrary<TextDamage> = fc.oneof(
    fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
    fc.record({ kind: fc.constant("invalid-utf8" as const), at: fc.nat(), bytes: invalidUtf8 }),
    fc.record({ kind: fc.constant("raw-nul" as const), at: fc.nat() }),
    fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), text: fc.constantFrom("{", "}", "[", "]", ",", ":", "\"", "\\", "\\ud800", "\\u0000", "\\x41", "'", "NaN", "//", "/*", "\n") }),
    fc.constant({ kind: "bom" as const })
);

/** Applies a damage to a JSON text; the result is bytes, since some damages are not text. */
export function damage(text: string, hurt: TextDamage): Uint8Array {
    const bytes = Buffer.from(text, "utf8");
    if (hurt.kind === "bom") return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
    const at = hurt.at % (bytes.length + 1);
    switch (hurt.kind) {
        case "truncate": return bytes.subarray(0, at);
        case "invalid-utf8": return Buffer.concat([bytes.subarray(0, at), Buffer.from(hurt.bytes), bytes.subarray(at)]);
        case "raw-nul": return Buffer.concat([bytes.subarray(0, at), Buffer.from([0]), bytes.subarray(at)]);
        case "insert": return Buffer.concat([bytes.subarray(0, at), Buffer.from(hurt.text), bytes.subarray(at)]);
    }
}

/** A JSON text nested `depth` levels deep (arrays or objects), built without recursion. */
export function nested(depth: number, kind: "array" | "object", inner = "1"): string {
    return kind === "array" ? "[".repeat(depth) + inner + "]".repeat(depth) : "{\"a\":".repeat(depth) + inner + "}".repeat(depth);
}

/** An Ollama message: its roles (and unknown ones), `thinking`, object tool-call arguments, `images`, `tool_name`. */
const ollamaMessage = fc.record({
    role: field(fc.constantFrom("system", "user", "assistant", "tool", "USER", "wizard", "developer", "")),
    content: field(oddText, fc.constant("Hi")),
    thinking: field(oddText),
    images: field(fc.constantFrom([], ["aGk="])),
    tool_calls: field(fc.array(fc.record({ function: field(fc.record({ name: field(fc.constantFrom("get_weather", "")), arguments: toolArguments })) }), { maxLength: 2 })),
    tool_name: field(oddText),
    tool_call_id: field(oddText)
}, { requiredKeys: [] });

/** Ollama's `options` (api.Options): the sampling ones, the ignored ones, and wrong types. */
const ollamaOptions = fc.record({
    temperature: samplingFields["temperature"]!, top_p: probability, top_k: samplingFields["top_k"]!, min_p: probability,
    seed: samplingFields["seed"]!, num_predict: field(fc.constantFrom(-2, -1, 0, 1, 4, 1e308), fc.integer({ min: -5, max: 8 })),
    stop: field(fc.array(fc.string({ maxLength: 4 }), { maxLength: 20 }), oddText), repeat_penalty: samplingFields["repetition_penalty"]!,
    presence_penalty: samplingFields["presence_penalty"]!, frequency_penalty: samplingFields["frequency_penalty"]!,
    num_ctx: field(fc.constantFrom(1, 2048, 1 << 20, 0, -1)), mirostat: anyValue, num_gpu: anyValue
}, { requiredKeys: [] });

/** The fields of Ollama's /api/chat and /api/generate. */
export const ollamaFields: Record<string, fc.Arbitrary<Field>> = {
    model: field(fc.constantFrom("maple-preview", "maple-preview:latest", "llama3.2", ""), oddText),
    messages: field(fc.array(ollamaMessage, { minLength: 1, maxLength: 4 }), fc.constantFrom([], [{ role: "user", content: promptPastContext }])),
    prompt: field(oddText, fc.constantFrom("", promptPastContext)),
    system: field(oddText),
    suffix: field(oddText),
    raw: field(fc.boolean()),
    template: field(oddText),
    context: field(fc.array(fc.integer(), { maxLength: 3 })),
    images: field(fc.constantFrom([], ["aGk="])),
    tools: field(fc.array(tool, { maxLength: 2 })),
    think: field(fc.constantFrom(true, false, "low", "medium", "high", "max", "very")),
    format: field(fc.constantFrom("json", "", "yaml"), schema),
    options: field(ollamaOptions),
    stream: field(fc.boolean()),
    keep_alive: field(fc.constantFrom("5m", 0, -1, "forever")),
    logprobs: field(fc.boolean()),
    top_logprobs: field(fc.constantFrom(0, 5, 20, 21, -1)),
    grammar
};

/** The sampling fields Anthropic's route takes besides its own (`max_tokens`, `stop_sequences`, `stream`). */
const anthropicSampling: Record<string, fc.Arbitrary<Field>> = Object.fromEntries(["model", "temperature", "top_p", "top_k", "min_p", "repetition_penalty",
    "presence_penalty", "frequency_penalty", "seed", "ignore_eos", "logit_bias", "grammar"].map((name) => [name, samplingFields[name]!]));

const anthropicText = fc.record({ type: fc.constant("text"), text: field(oddText), cache_control: field(fc.constant({ type: "ephemeral" })) }, { requiredKeys: ["type"] });

/** Anthropic content blocks: every type a client sends (and some it should not), fields right and wrong. */
const anthropicBlock: fc.Arbitrary<Field> = fc.oneof(
    { weight: 4, arbitrary: anthropicText },
    { weight: 1, arbitrary: fc.record({ type: fc.constant("thinking"), thinking: field(oddText), signature: field(oddText, fc.constant("")) }, { requiredKeys: ["type"] }) },
    { weight: 1, arbitrary: fc.record({ type: fc.constant("redacted_thinking"), data: field(oddText) }, { requiredKeys: ["type"] }) },
    {
        weight: 2, arbitrary: fc.record({
            type: fc.constant("tool_use"), id: field(fc.constantFrom("toolu_1", "toolu_2", ""), oddText), name: field(fc.constantFrom("get_weather", "f", ""), oddText),
            input: field(fc.constant({ city: "Lagos" }), fc.jsonValue({ maxDepth: 2 }))
        }, { requiredKeys: ["type"] })
    },
    {
        weight: 2, arbitrary: fc.record({
            type: fc.constant("tool_result"), tool_use_id: field(fc.constantFrom("toolu_1", "toolu_2", "toolu_3", ""), oddText),
            content: field(oddText, fc.array(anthropicText, { maxLength: 2 }), fc.array(anyValue, { maxLength: 2 })), is_error: field(fc.boolean())
        }, { requiredKeys: ["type"] })
    },
    { weight: 1, arbitrary: fc.record({ type: fc.constantFrom("image", "document", "search_result", "server_tool_use", "container_upload", ""), source: anyValue }, { requiredKeys: ["type"] }) },
    { weight: 1, arbitrary: anyValue }
);

const anthropicContent = fc.oneof(
    { weight: 4, arbitrary: oddText },
    { weight: 3, arbitrary: fc.array(anthropicBlock, { maxLength: 3 }) },
    { weight: 1, arbitrary: anyValue },
    { weight: 1, arbitrary: fc.constant(omitted) }
);

const anthropicMessage = fc.oneof(
    { weight: 8, arbitrary: fc.record({ role: fc.oneof(fc.constantFrom("user", "user", "assistant", "system", "developer"), role), content: anthropicContent }, { requiredKeys: ["role"] }) },
    { weight: 1, arbitrary: anyValue }
);

/** A conversation through a tool use, with ids that sometimes match; it ends on the user's turn (or, sometimes, the assistant's). */
const anthropicToolConversation = fc.tuple(
    fc.array(fc.constantFrom("toolu_1", "toolu_2"), { minLength: 1, maxLength: 2 }),
    fc.array(fc.constantFrom("toolu_1", "toolu_2", "toolu_3"), { minLength: 1, maxLength: 3 }),
    fc.boolean()
).map(([uses, results, endOnAssistant]) => [
    { role: "user", content: "Weather?" },
    { role: "assistant", content: [{ type: "thinking", thinking: "Look it up.", signature: "" }, ...uses.map((id) => ({ type: "tool_use", id, name: "get_weather", input: { city: "Lagos" } }))] },
    { role: "user", content: results.map((id) => ({ type: "tool_result", tool_use_id: id, content: "31°C" })) },
    ...(endOnAssistant ? [{ role: "assistant", content: "It is" }] : [])
]);

const anthropicTool = fc.oneof(
    {
        weight: 4, arbitrary: fc.record({
            type: field(fc.constantFrom("custom", "bash_20250124", "text_editor_20250728", "web_search_20250305"), fc.constant(null)),
            name: field(fc.constantFrom("get_weather", "f", "x".repeat(129)), oddText),
            description: field(oddText),
            input_schema: schema,
            defer_loading: field(fc.boolean()),
            cache_control: field(fc.constant({ type: "ephemeral" }))
        }, { requiredKeys: ["name"] })
    },
    { weight: 1, arbitrary: anyValue }
);

export const messagesFields: Record<string, fc.Arbitrary<Field>> = {
    ...anthropicSampling,
    max_tokens: field(fc.constantFrom(1, 2, 4, 1e308), fc.integer({ min: -2, max: 8 })),
    stop_sequences: field(fc.array(fc.string({ maxLength: 4 }), { maxLength: 18 }), fc.array(oddText, { maxLength: 3 })),
    stream: field(fc.boolean()),
    system: field(oddText, fc.array(anthropicBlock, { maxLength: 2 })),
    messages: field(
        fc.array(anthropicMessage, { minLength: 1, maxLength: 5 }),
        anthropicToolConversation,
        fc.constantFrom([], [{ role: "user", content: promptPastContext }], [{ role: "assistant", content: "prefill" }])
    ),
    tools: field(fc.array(anthropicTool, { maxLength: 3 })),
    tool_choice: field(
        fc.record({
            type: field(fc.constantFrom("auto", "any", "tool", "none", "required", "function")),
            name: field(fc.constantFrom("get_weather", "f", "nope", "")),
            disable_parallel_tool_use: field(fc.boolean())
        }, { requiredKeys: ["type"] }),
        fc.constantFrom("auto", "any")
    ),
    thinking: field(fc.record({
        type: field(fc.constantFrom("enabled", "adaptive", "disabled", "auto")),
        budget_tokens: field(fc.constantFrom(1, 2, 3, 1024), fc.integer({ min: -2, max: 8 })),
        display: field(fc.constantFrom("summarized", "omitted", "full"))
    }, { requiredKeys: ["type"] })),
    output_config: field(fc.record({ format: field(fc.record({ type: field(fc.constantFrom("json_schema", "json")), schema }, { requiredKeys: ["type"] })), effort: anyValue }, { requiredKeys: [] })),
    output_format: field(fc.record({ type: field(fc.constantFrom("json_schema")), schema }, { requiredKeys: ["type"] })),
    metadata: field(fc.record({ user_id: field(oddText) }, { requiredKeys: [] })),
    chat_template_kwargs: chatFields["chat_template_kwargs"]!,
    service_tier: field(fc.constantFrom("auto", "standard_only"))
};

/** Responses content parts: text in its three names, and parts the model cannot read. */
const responsesPart: fc.Arbitrary<Field> = fc.oneof(
    { weight: 4, arbitrary: fc.record({ type: fc.constantFrom("input_text", "output_text", "text", "summary_text", "reasoning_text"), text: field(oddText) }, { requiredKeys: ["type"] }) },
    { weight: 1, arbitrary: fc.record({ type: fc.constant("refusal"), refusal: field(oddText) }, { requiredKeys: ["type"] }) },
    { weight: 1, arbitrary: fc.record({ type: fc.constantFrom("input_image", "input_file", "input_audio", ""), image_url: anyValue }, { requiredKeys: ["type"] }) },
    { weight: 1, arbitrary: anyValue }
);

const responsesContent = field(oddText, fc.array(responsesPart, { maxLength: 3 }));
const callId = field(fc.constantFrom("call_1", "call_2", ""), oddText);

/** Input items of every type a client (Codex, the Agents SDK) sends; `ids` are item ids the store holds, for item_reference. */
function responsesItem(ids: readonly string[]): fc.Arbitrary<Field> {
    return fc.oneof(
        {
            weight: 5, arbitrary: fc.record({
                type: field(fc.constant("message")), role: fc.oneof(fc.constantFrom("user", "user", "assistant", "system", "developer"), role), content: responsesContent
            }, { requiredKeys: ["role"] })
        },
        {
            weight: 2, arbitrary: fc.record({
                type: fc.constant("reasoning"), summary: field(fc.array(responsesPart, { maxLength: 2 })), content: field(fc.array(responsesPart, { maxLength: 2 })),
                encrypted_content: field(oddText)
            }, { requiredKeys: ["type"] })
        },
        {
            weight: 2, arbitrary: fc.record({
                type: fc.constantFrom("function_call", "custom_tool_call"), call_id: callId, name: field(fc.constantFrom("get_weather", "f", ""), oddText),
                arguments: toolArguments, input: field(oddText)
            }, { requiredKeys: ["type"] })
        },
        {
            weight: 2, arbitrary: fc.record({
                type: fc.constantFrom("function_call_output", "custom_tool_call_output"), call_id: callId, output: responsesContent
            }, { requiredKeys: ["type"] })
        },
        { weight: 1, arbitrary: fc.record({ type: fc.constant("item_reference"), id: field(fc.constantFrom(...ids, "msg_nope", ""), oddText) }, { requiredKeys: ["type"] }) },
        { weight: 1, arbitrary: fc.record({ type: fc.constantFrom("web_search_call", "local_shell_call", "compaction", ""), id: field(oddText) }, { requiredKeys: ["type"] }) },
        { weight: 1, arbitrary: anyValue }
    );
}

const responsesFunctionTool = fc.record({
    type: fc.constantFrom("function", "function", "custom"), name: field(fc.constantFrom("get_weather", "f", "x".repeat(129)), oddText),
    description: field(oddText), parameters: schema, strict: field(fc.boolean()), format: anyValue
}, { requiredKeys: ["type"] });

/** Tools as the Responses API lists them: functions, freeform tools, namespaces of them (holding anything), hosted tools. */
const responsesTool: fc.Arbitrary<Field> = fc.oneof(
    { weight: 4, arbitrary: responsesFunctionTool },
    {
        weight: 2, arbitrary: fc.record({
            type: fc.constant("namespace"), name: field(fc.constantFrom("ns", ""), oddText),
            tools: field(fc.array(fc.oneof(
                { weight: 2, arbitrary: responsesFunctionTool },
                { weight: 2, arbitrary: fc.constantFrom(null, null, 1, "f", [], { type: "namespace", tools: [] }) },
                { weight: 1, arbitrary: anyValue }
            ), { maxLength: 3 }))
        }, { requiredKeys: ["type"] })
    },
    { weight: 1, arbitrary: fc.record({ type: fc.constantFrom("web_search", "file_search", "mcp", "computer_use_preview", "local_shell", "") }, { requiredKeys: ["type"] }) },
    { weight: 1, arbitrary: anyValue }
);

/** /v1/responses fields; `responseIds` and `itemIds` name what the server has stored, so some continuations are valid. */
export function responsesFields(responseIds: readonly string[], itemIds: readonly string[]): Record<string, fc.Arbitrary<Field>> {
    return {
        ...samplingFields,
        // A string here (OpenAI's deprecated name of safety_identifier).
        user: field(oddText),
        input: field(oddText, fc.array(responsesItem(itemIds), { minLength: 1, maxLength: 5 }), fc.constantFrom([], promptPastContext, [{ role: "user", content: promptPastContext }])),
        instructions: field(oddText),
        tools: field(fc.array(responsesTool, { maxLength: 3 })),
        tool_choice: field(
            fc.constantFrom("none", "auto", "required", "any"),
            fc.record({ type: field(fc.constantFrom("function", "custom", "allowed_tools", "web_search")), name: field(fc.constantFrom("get_weather", "f", "nope")) }, { requiredKeys: [] })
        ),
        parallel_tool_calls: field(fc.boolean()),
        text: field(fc.record({
            format: field(fc.record({ type: field(fc.constantFrom("text", "json_object", "json_schema", "grammar")), name: field(oddText), schema, strict: field(fc.boolean()) }, { requiredKeys: [] })),
            verbosity: field(fc.constantFrom("low", "medium", "high"))
        }, { requiredKeys: [] })),
        reasoning: field(fc.record({
            effort: field(fc.constantFrom("none", "minimal", "low", "medium", "high", "xhigh", "max")),
            summary: field(fc.constantFrom("auto", "concise", "detailed", "none")),
            generate_summary: field(fc.constantFrom("auto", "concise"))
        }, { requiredKeys: [] })),
        max_output_tokens: field(fc.constantFrom(1, 2, 4, 1e308), fc.integer({ min: -2, max: 8 })),
        top_logprobs: field(fc.constantFrom(0, 5, 20, 21)),
        store: field(fc.boolean()),
        previous_response_id: field(fc.constantFrom(...responseIds, "resp_nope", "")),
        conversation: field(fc.constantFrom("conv_1"), fc.record({ id: oddText })),
        metadata: field(fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(oddText, anyValue), { maxKeys: 17 })),
        prompt_cache_key: field(oddText),
        safety_identifier: field(oddText),
        service_tier: field(fc.constantFrom("auto", "default", "flex", "priority")),
        truncation: field(fc.constantFrom("auto", "disabled", "none")),
        include: field(fc.array(fc.constantFrom("reasoning.encrypted_content", "message.output_text.logprobs", "file_search_call.results", ""), { maxLength: 2 })),
        background: field(fc.boolean()),
        prompt: field(fc.record({ id: oddText })),
        max_tool_calls: field(fc.integer({ min: -1, max: 3 })),
        chat_template_kwargs: chatFields["chat_template_kwargs"]!
    };
}

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { Ajv } from "ajv";
import { mistralCallId } from "../../src/chatFormat/formats/mistral.js";
import { ask, chatApis, type Answer, type ChatApi } from "../helpers/apiAnswers.js";
import { exact } from "../helpers/grammar.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";

/**
 * Every model family's chat format end to end, on the four chat APIs, streamed and not: the
 * random-weight maple-tiny (Qwen3's tokenizer) serves each family's real chat template
 * (`--chat-template`), recognised as its format, and writes the family's exact syntax where a
 * test forces it with `grammar`. Its vocabulary lacks the families' special tokens, so their
 * markers are written as text: what the parsers read either way (special tokens reach them as
 * text too, see core/preservedTokens.ts).
 */

const weather = { name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { city: { type: "string", minLength: 1, maxLength: 12 } }, required: ["city"] } };
const time = { name: "get_time", description: "The time now", parameters: { type: "object", properties: {} } };

interface Family {
    format: string;
    /** The family's real template (templates/). */
    template: string;
    /** The family reasons (in its outputs below: "Adding.", "Two tools."); Llama 3 does not. */
    reasons: boolean;
    /** Raw output: reasoning "Adding." then the answer "4". */
    answer: string;
    /** Raw output: reasoning "Two tools." then get_weather {"city": "Lagos"} and get_time {}. */
    twoCalls: string;
    /** The family's markers: none may reach a content or reasoning delta. */
    markers: readonly string[];
    /** What the prompt of the turn after a call holds: the family's own rendering of the call and of its result. */
    roundTrip: readonly string[];
    /** The family's format twin, served with the template it carries (below). */
    twin?: Twin;
}

/** A format twin: `synthetic:NAME`, random weights with the family's own tokenizer and template. */
interface Twin {
    name: string;
    /** Markers its vocabulary holds as one token each: written by the model as those tokens. */
    tokens: readonly string[];
    /** Outputs of the twin's own template where it differs from the one above (Qwen3-Coder does not reason). */
    outputs?: Pick<Family, "reasons" | "answer" | "twoCalls">;
    /**
     * The calls its `twoCalls` holds, where not the two above: gpt-oss's <|call|> is an end-of-generation
     * token, so a turn holds one call, ended by the model (a grammar cannot force an end-of-generation
     * token: llama.cpp accepts one only where the grammar is complete).
     */
    calls?: readonly { name: string; arguments: unknown }[];
}

const families: readonly Family[] = [
    {
        format: "harmony",
        reasons: true,
        template: "openai-gpt-oss-120b.jinja",
        answer: "<|channel|>analysis<|message|>Adding.<|end|><|start|>assistant<|channel|>final<|message|>4",
        twoCalls: "<|channel|>analysis<|message|>Two tools.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Lagos\"}<|call|>"
            + "<|start|>assistant<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}",
        markers: ["<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|call|>", "<|constrain|>"],
        twin: {
            name: "gpt-oss-tiny", tokens: ["<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|call|>", "<|constrain|>"],
            outputs: {
                reasons: true, answer: "<|channel|>analysis<|message|>Adding.<|end|><|start|>assistant<|channel|>final<|message|>4",
                twoCalls: "<|channel|>analysis<|message|>Two tools.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Lagos\"}"
            },
            calls: [{ name: "get_weather", arguments: { city: "Lagos" } }]
        },
        roundTrip: [
            "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Lagos\"}<|call|>",
            "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>\"31C\"<|end|>"
        ]
    },
    {
        // Qwen3.5 (the XML calls, and <think> opened by the prompt).
        format: "qwen3-coder",
        reasons: true,
        template: "Qwen3.5-4B.jinja",
        answer: "Adding.\n</think>\n\n4",
        twoCalls: "Two tools.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nLagos\n</parameter>\n</function>\n</tool_call>\n"
            + "<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
        markers: ["<think>", "</think>", "<tool_call>", "</tool_call>", "<function=", "<parameter="],
        roundTrip: ["<tool_call>\n<function=get_weather>\n<parameter=city>\nLagos\n</parameter>\n</function>\n</tool_call>", "<tool_response>\n31C\n</tool_response>"],
        twin: {
            name: "qwen3-coder-tiny", tokens: ["<tool_call>", "</tool_call>", "<|im_start|>", "<|im_end|>"],
            outputs: {
                reasons: false, answer: "4",
                twoCalls: "<tool_call>\n<function=get_weather>\n<parameter=city>\nLagos\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_time>\n</function>\n</tool_call>"
            }
        }
    },
    {
        format: "llama3",
        reasons: false,
        template: "meta-llama-Llama-3.1-8B-Instruct.jinja",
        answer: "4",
        twoCalls: "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Lagos\"}}\n{\"name\": \"get_time\", \"parameters\": {}}",
        markers: ["<|python_tag|>"],
        twin: { name: "llama3.1-tiny", tokens: ["<|python_tag|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"] },
        roundTrip: [
            "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Lagos\"}}<|eot_id|>",
            "<|start_header_id|>ipython<|end_header_id|>\n\n\"31C\"<|eot_id|>"
        ]
    },
    {
        format: "mistral",
        reasons: true,
        template: "mistralai-Ministral-3-14B-Reasoning-2512.jinja",
        answer: "[THINK]Adding.[/THINK]4",
        twoCalls: "[THINK]Two tools.[/THINK][TOOL_CALLS]get_weather[ARGS]{\"city\": \"Lagos\"}[TOOL_CALLS]get_time[ARGS]{}",
        markers: ["[TOOL_CALLS]", "[ARGS]", "[THINK]", "[/THINK]"],
        roundTrip: ["[THINK]Need the tool.[/THINK][TOOL_CALLS]get_weather[ARGS]{\"city\": \"Lagos\"}", "[TOOL_RESULTS]31C[/TOOL_RESULTS]"]
    },
    {
        format: "mistral-nemo",
        reasons: false,
        template: "mistralai-Mistral-Nemo-Instruct-2407.jinja",
        answer: "4",
        twoCalls: "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lagos\"}}, {\"name\": \"get_time\", \"arguments\": {}}]",
        markers: ["[TOOL_CALLS]"],
        roundTrip: [
            `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Lagos"}, "id": "${mistralCallId("call_1")}"}]`,
            `[TOOL_RESULTS]{"content": 31C, "call_id": "${mistralCallId("call_1")}"}[/TOOL_RESULTS]`
        ]
    },
    {
        // llama.cpp's R1 template (the prompt opens <think>).
        format: "deepseek-r1",
        reasons: true,
        template: "llama-cpp-deepseek-r1.jinja",
        twin: { name: "deepseek-r1-tiny", tokens: ["</think>", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>", "<｜Assistant｜>"] },
        answer: "Adding.\n</think>\n\n4",
        twoCalls: "Two tools.\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Lagos\"}\n```<｜tool▁call▁end｜>\n"
            + "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        markers: ["</think>", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"],
        roundTrip: [
            "<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Lagos\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            "<｜tool▁output▁begin｜>31C<｜tool▁output▁end｜>"
        ]
    },
    {
        // Thinking is off by default: every API's reasoning field turns it on (its `thinking`), and the prompt opens <think>.
        format: "deepseek-v3.1",
        reasons: true,
        template: "deepseek-ai-DeepSeek-V3.1.jinja",
        answer: "Adding.</think>4",
        twoCalls: "Two tools.</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Lagos\"}<｜tool▁call▁end｜>"
            + "<｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        markers: ["</think>", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"],
        roundTrip: ["<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Lagos\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>", "<｜tool▁output▁begin｜>31C<｜tool▁output▁end｜>"]
    },
    {
        format: "glm4.5",
        reasons: true,
        template: "GLM-4.6.jinja",
        answer: "\n<think>Adding.</think>\n4",
        twoCalls: "\n<think>Two tools.</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Lagos</arg_value>\n</tool_call>\n<tool_call>get_time\n</tool_call>",
        markers: ["<think>", "</think>", "<tool_call>", "</tool_call>", "<arg_key>", "<arg_value>"],
        roundTrip: ["<think>Need the tool.</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Lagos</arg_value>\n</tool_call>", "<tool_response>\n31C\n</tool_response>"]
    },
    {
        // Gemma 3: its template shows no tools, so the format does (in the system text, which the
        // template folds into the first user turn), and the answer beside tools is one JSON object.
        format: "generic",
        reasons: false,
        template: "google-gemma-3-4b-it.jinja",
        twin: { name: "gemma3-tiny", tokens: ["<start_of_turn>", "<end_of_turn>"] },
        answer: "4",
        twoCalls: "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lagos\"}}, {\"name\": \"get_time\", \"arguments\": {}}]}",
        markers: ["{\"tool_calls\"", "{\"response\""],
        roundTrip: [
            "You can call any of the following tools to satisfy the user's requests: [",
            `<start_of_turn>model\n${JSON.stringify({ tool_calls: [{ name: "get_weather", arguments: { city: "Lagos" }, id: "call_1" }] }, null, 2)}<end_of_turn>`,
            `<start_of_turn>user\n${JSON.stringify({ tool_response: { tool: "get_weather", content: "31C", tool_call_id: "call_1" } }, null, 2)}<end_of_turn>`
        ]
    }
];

/** Each API's own field for "reason" (the one switch they all map onto). */
const reasoningOn: Record<ChatApi, Record<string, unknown>> = {
    chat: { reasoning_effort: "high" },
    responses: { reasoning: { effort: "high" } },
    messages: { thinking: { type: "enabled", budget_tokens: 150 } },
    ollama: { think: true }
};

const templatePath = (file: string): string => fileURLToPath(new URL(`../../../templates/${file}`, import.meta.url));

function assertNoMarkers(answer: Answer, markers: readonly string[], context: string): void {
    for (const text of [...answer.deltas, answer.content, answer.reasoning]) {
        for (const marker of markers) assert.ok(!text.includes(marker), `${context}: ${JSON.stringify(text)} holds ${marker}`);
    }
}

for (const family of families) {
    describe(`the ${family.format} chat format (${family.template}), end to end`, () => {
        let server: TestServer;
        before(async () => {
            server = await startTestServer({ chatTemplateFile: templatePath(family.template), parallel: 1 });
        });
        after(async () => server.close());

        it("is recognised from the template: /health says so, and /api/show says whether it thinks", async () => {
            const health = await (await server.request("/health")).json() as { chat_format: string };
            assert.equal(health.chat_format, family.format);
            // Ollama clients offer reasoning by this: the family's own reasoning opening in its template.
            const show = await (await server.post("/api/show", { model: "maple-preview" })).json() as { capabilities: string[] };
            assert.equal(show.capabilities.includes("thinking"), family.reasons, JSON.stringify(show.capabilities));
        });

        for (const api of chatApis) {
            for (const stream of [false, true]) {
                it(`${api}${stream ? ", streamed" : ""}: reasoning split from the answer, and tool calls parsed into the API's own shape`, async () => {
                    const extra = family.reasons ? reasoningOn[api] : {};
                    const answer = await ask(server, api, { user: "What is 2+2?", grammar: exact(family.answer), extra }, stream);
                    assert.deepEqual([answer.reasoning, answer.content, answer.calls], [family.reasons ? "Adding." : "", "4", []]);
                    assertNoMarkers(answer, family.markers, `${api} answer`);
                    const calls = await ask(server, api, { user: "Weather and time?", tools: [weather, time], grammar: exact(family.twoCalls), extra }, stream);
                    assert.equal(calls.reasoning, family.reasons ? "Two tools." : "");
                    assert.equal(calls.content, "");
                    assert.deepEqual(calls.calls, [{ name: "get_weather", arguments: { city: "Lagos" } }, { name: "get_time", arguments: {} }]);
                    assert.ok(["tool_calls", "completed", "tool_use", "stop"].includes(calls.finish), calls.finish);
                    assertNoMarkers(calls, family.markers, `${api} calls`);
                });
            }
        }

        it("enforces tool_choice required and a named function in the family's syntax, the thinking budget closing its reasoning first (a random model)", async () => {
            await assertToolChoiceEnforced(server, family, family.markers);
        });

        if (family.format === "generic") {
            it("streams a response out of its JSON, forced with grammar, and without grammar answers in the JSON shape the format enforces (a random model)", async () => {
                const response = await ask(server, "chat", { user: "Hi", tools: [weather], grammar: exact("{\"response\": \"Hello \\\"you\\\"\"}") }, true);
                assert.deepEqual([response.content, response.calls], ["Hello \"you\"", []]);
                assert.ok(response.deltas.length > 1, JSON.stringify(response.deltas));
                const validate = new Ajv().compile(weather.parameters);
                for (const seed of [1, 2, 3]) {
                    const answer = await ask(server, "chat", { user: "Weather in Lagos?", tools: [weather], maxTokens: 60, extra: { temperature: 1, seed } }, false);
                    const context = `seed ${seed}: ${JSON.stringify(answer)}`;
                    // Calls cut off by the token limit stay content, verbatim; else the envelope never shows.
                    if (answer.finish !== "length") assert.ok(!answer.content.startsWith("{"), context);
                    else assert.ok(!answer.content.startsWith("{\"response\""), context);
                    for (const call of answer.calls) assert.ok(call.name === "get_weather" && validate(call.arguments), context);
                }
                const show = await (await server.post("/api/show", { model: "maple-preview" })).json() as { capabilities: string[] };
                assert.ok(show.capabilities.includes("tools"), JSON.stringify(show.capabilities));
            });
        }

        it("renders a call and its result back in the family's own tokens on the next turn", async () => {
            const messages = [
                { role: "user", content: "Weather in Lagos?" },
                { role: "assistant", content: null, reasoning_content: "Need the tool.", tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\": \"Lagos\"}" } }] },
                // The agent loop's next request (Mistral's templates refuse a user turn right after a result).
                { role: "tool", tool_call_id: "call_1", content: "31C" }
            ];
            const tokenized = await (await server.post("/tokenize", { messages, tools: [{ type: "function", function: weather }] })).json() as { tokens: number[] };
            const { content: prompt } = await (await server.post("/detokenize", { tokens: tokenized.tokens })).json() as { content: string };
            for (const piece of family.roundTrip) assert.ok(prompt.includes(piece), `${JSON.stringify(piece)} not in ${JSON.stringify(prompt)}`);
        });
    });
}

/**
 * Seeds of a random model under Messages' `tool_choice` `any` (required) and `tool` (a named
 * one), one call each: the family's grammar must give exactly that call, with valid arguments, and
 * a reasoning family's thought cut by the thinking budget with its own marker.
 */
async function assertToolChoiceEnforced(server: TestServer, family: Family, markers: readonly string[], seeds: readonly number[] = [1, 2, 3]): Promise<void> {
    const validate = new Ajv().compile(weather.parameters);
    const thinking = family.reasons ? { type: "enabled", budget_tokens: 4 } : { type: "disabled" };
    for (const seed of seeds) {
        for (const toolChoice of [{ type: "any" }, { type: "tool", name: "get_weather" }]) {
            const answer = await ask(server, "messages", {
                user: "Weather in Lagos?", tools: toolChoice.type === "any" ? [weather, time] : [weather], maxTokens: 400,
                extra: { tool_choice: { ...toolChoice, disable_parallel_tool_use: true }, thinking, temperature: 1, seed }
            }, false);
            const context = `seed ${seed} ${JSON.stringify(toolChoice)}: ${JSON.stringify(answer)}`;
            assert.equal(answer.finish, "tool_use", context);
            assert.equal(answer.calls.length, 1, context);
            const [call] = answer.calls;
            assert.ok(call!.name === "get_weather" || (toolChoice.type === "any" && call!.name === "get_time"), context);
            if (call!.name === "get_weather") assert.ok(validate(call!.arguments), context);
            assertNoMarkers(answer, markers, context);
        }
    }
}

/** `exact(text)`, but each of the markers (text → token id) as that one token (GBNF `<[id]>`), never spelt out. */
function exactWithTokens(text: string, ids: ReadonlyMap<string, number>): string {
    const markers = [...ids.keys()].sort((a, b) => b.length - a.length).map((marker) => marker.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    const parts = text.split(new RegExp(`(${markers.join("|")})`)).filter((part) => part !== "");
    return `root ::= ${parts.map((part) => ids.has(part) ? `<[${ids.get(part)}]>` : JSON.stringify(part)).join(" ")}`;
}

/**
 * Each family that has a format twin, once more on the twin itself: its own template (no
 * --chat-template) and its own vocabulary, whose special markers are one token each. In the prompt
 * the template's markers become those tokens (and the usage counts them so); in the output the
 * model writes them as those tokens (forced with grammar), which reach the parser as text and
 * never reach `content`.
 */
for (const family of families) {
    const twin = family.twin;
    if (twin === undefined) continue;
    const outputs = { reasons: family.reasons, answer: family.answer, twoCalls: family.twoCalls, ...twin.outputs };
    describe(`the ${family.format} chat format on synthetic:${twin.name} (the family's tokenizer and template), end to end`, () => {
        let server: TestServer;
        const ids = new Map<string, number>();
        before(async () => {
            server = await startTestServer({ model: `synthetic:${twin.name}`, parallel: 1 });
        });
        after(async () => server.close());

        it("recognises the template it carries; its markers are one token each in the prompt, and the usage counts them so", async () => {
            const health = await (await server.request("/health")).json() as { chat_format: string; synthetic: boolean };
            assert.deepEqual([health.chat_format, health.synthetic], [family.format, true]);
            const tokenize = async (body: Record<string, unknown>): Promise<number[]> => (await (await server.post("/tokenize", body)).json() as { tokens: number[] }).tokens;
            const bos = await tokenize({ content: "" });
            for (const marker of twin.tokens) {
                const tokens = (await tokenize({ content: marker })).slice(bos.length);
                assert.equal(tokens.length, 1, `${marker}: ${JSON.stringify(tokens)}`);
                ids.set(marker, tokens[0]!);
            }
            const messages = [
                { role: "user", content: "Weather in Lagos?" },
                { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\": \"Lagos\"}" } }] },
                { role: "tool", tool_call_id: "call_1", content: "31C" }
            ];
            const tools = [{ type: "function", function: weather }];
            const prompt = await tokenize({ messages, tools });
            for (const marker of twin.tokens.filter((candidate) => family.roundTrip.some((piece) => piece.includes(candidate)))) {
                assert.ok(prompt.includes(ids.get(marker)!), `${marker} (${ids.get(marker)}) not in the prompt's tokens`);
            }
            const response = await (await server.post("/v1/chat/completions", { messages, tools, max_tokens: 1 })).json() as { usage: { prompt_tokens: number } };
            assert.equal(response.usage.prompt_tokens, prompt.length);
        });

        // gpt-oss's <|call|> ends generation: a client grammar that puts it mid-rule can never be
        // followed (llama.cpp matches such a token only where the grammar is complete). It was a 500.
        if (twin.tokens.includes("<|call|>")) {
            it("refuses a client grammar that asks for an end-of-generation token mid-rule with a 400 naming it, and serves the grammar that ends there", async () => {
                for (const marker of ["<|call|>", `<[${ids.get("<|call|>")}]>`]) {
                    const refused = await server.post("/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], grammar: `root ::= "ab" ${marker} "cd"`, max_tokens: 8 });
                    assert.equal(refused.status, 400);
                    const { error } = await refused.json() as { error: { param: string; message: string } };
                    assert.equal(error.param, "grammar");
                    assert.ok(error.message.includes(`the token ${marker} ends generation`), error.message);
                }
                const served = await server.post("/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], grammar: "root ::= \"ab\" \"cd\"", max_tokens: 8 });
                assert.equal(served.status, 200);
                const body = await served.json() as { choices: { finish_reason: string; message: { content: string } }[] };
                assert.deepEqual([body.choices[0]!.message.content, body.choices[0]!.finish_reason], ["abcd", "stop"]);
            });
        }

        for (const stream of [false, true]) {
            it(`every API${stream ? ", streamed" : ""}: the model writes the markers as its special tokens; reasoning, answer and calls parsed, no marker in any content`, async () => {
                for (const api of chatApis) {
                    const extra = outputs.reasons ? reasoningOn[api] : {};
                    const answer = await ask(server, api, { user: "What is 2+2?", grammar: exactWithTokens(outputs.answer, ids), extra }, stream);
                    assert.deepEqual([answer.reasoning, answer.content, answer.calls], [outputs.reasons ? "Adding." : "", "4", []], api);
                    assertNoMarkers(answer, [...family.markers, ...twin.tokens], `${api} answer`);
                    const calls = await ask(server, api, { user: "Weather and time?", tools: [weather, time], grammar: exactWithTokens(outputs.twoCalls, ids), extra }, stream);
                    assert.deepEqual([calls.reasoning, calls.content], [outputs.reasons ? "Two tools." : "", ""], api);
                    assert.deepEqual(calls.calls, twin.calls ?? [{ name: "get_weather", arguments: { city: "Lagos" } }, { name: "get_time", arguments: {} }], api);
                    assertNoMarkers(calls, [...family.markers, ...twin.tokens], `${api} calls`);
                }
            });
        }

        it("enforces tool_choice required and a named function in the family's syntax with its own vocabulary (a random model)", async () => {
            // One seed: the family's grammar has three on maple-tiny above; this is its vocabulary's turn.
            await assertToolChoiceEnforced(server, family, [...family.markers, ...twin.tokens], [1]);
        });
    });
}

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";
import { exact } from "../helpers/grammar.js";
import { parseSse } from "../helpers/sse.js";

interface ResponseWire {
    id: string;
    object: string;
    status: string;
    model: string;
    output: Record<string, unknown>[];
    output_text: string;
    incomplete_details: { reason: string } | null;
    previous_response_id: string | null;
    usage: { input_tokens: number; output_tokens: number; total_tokens: number; input_tokens_details: { cached_tokens: number }; output_tokens_details: { reasoning_tokens: number } };
    [key: string]: unknown;
}
interface EventWire {
    type: string;
    sequence_number: number;
    [key: string]: unknown;
}

const weatherTool = { type: "function", name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };
const answerText = "Let me add.\n</think>\n\nThe answer is 4.";
const callText = (name: string, args: Record<string, unknown>): string => `ok\n</think>\n\n<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

async function create(server: TestServer, body: Record<string, unknown>): Promise<ResponseWire> {
    const response = await server.post("/v1/responses", { max_output_tokens: 96, ...body });
    assert.equal(response.status, 200, await response.clone().text());
    assert.match(response.headers.get("content-type") ?? "", /application\/json/);
    return response.json() as Promise<ResponseWire>;
}

/** Reads a named-event SSE stream: each event's `event:` name must equal its `type`. */
async function readEvents(response: Response): Promise<EventWire[]> {
    const text = await response.text();
    assert.ok(!text.includes("[DONE]"), "the Responses stream has no [DONE]");
    return parseSse(text).map((block) => {
        assert.ok(block.event !== undefined, "every event is named");
        const event = JSON.parse(block.data) as EventWire;
        assert.equal(block.event, event.type);
        return event;
    });
}

async function stream(server: TestServer, body: Record<string, unknown>): Promise<EventWire[]> {
    const response = await server.post("/v1/responses", { max_output_tokens: 96, ...body, stream: true });
    assert.equal(response.status, 200, await response.clone().text());
    assert.match(response.headers.get("content-type") ?? "", /text\/event-stream/);
    const events = await readEvents(response);
    assert.deepEqual(events.map((event) => event.sequence_number), events.map((_, index) => index), "sequence_number counts from 0 without gaps");
    return events;
}

async function expectError(response: Response, status: number, param: string | null): Promise<WireError["error"]> {
    assert.equal(response.status, status, await response.clone().text());
    const body = await response.json() as WireError;
    assert.equal(body.error.param, param, body.error.message);
    return body.error;
}

describe("POST /v1/responses", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ maxNewTokensLimit: 256, maxPromptTokens: 900 });
    });
    after(async () => server.close());

    it("answers with reasoning and message items, output_text and usage", async () => {
        const response = await create(server, { model: "maple-preview", input: "What is 2+2?", instructions: "Be brief.", grammar: exact(answerText), metadata: { run: "1" } });
        assert.match(response.id, /^resp_/);
        assert.equal(response.object, "response");
        assert.equal(response.status, "completed");
        assert.equal(response.model, "maple-preview");
        assert.deepEqual(response.output.map((item) => item["type"]), ["reasoning", "message"]);
        const [reasoning, message] = response.output as [Record<string, unknown>, Record<string, unknown>];
        assert.match(String(reasoning["id"]), /^rs_/);
        assert.deepEqual(reasoning["content"], [{ type: "reasoning_text", text: "Let me add." }]);
        assert.deepEqual(reasoning["summary"], [{ type: "summary_text", text: "Let me add." }], "the summary is the trace itself");
        assert.match(String(message["id"]), /^msg_/);
        assert.equal(message["role"], "assistant");
        assert.equal(message["status"], "completed");
        assert.deepEqual(message["content"], [{ type: "output_text", text: "The answer is 4.", annotations: [], logprobs: [] }]);
        assert.equal(response.output_text, "The answer is 4.");
        assert.equal(response["instructions"], "Be brief.");
        assert.deepEqual(response["metadata"], { run: "1" });
        assert.equal(response["store"], true);
        const { usage } = response;
        assert.ok(usage.input_tokens > 0);
        assert.ok(usage.output_tokens_details.reasoning_tokens > 0 && usage.output_tokens_details.reasoning_tokens < usage.output_tokens);
        assert.equal(usage.total_tokens, usage.input_tokens + usage.output_tokens);
        assert.equal(typeof usage.input_tokens_details.cached_tokens, "number");
    });

    it("streams the full event sequence, and the final response equals the non-streamed one's shape", async () => {
        const events = await stream(server, { input: "What is 2+2?", grammar: exact(answerText), reasoning: { summary: "auto" } });
        const types = events.map((event) => event.type);
        const collapsed = types.filter((type, index) => type !== types[index - 1]);
        assert.deepEqual(collapsed.slice(0, 4), ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
        assert.ok(types.includes("response.reasoning_text.delta"));
        assert.ok(types.includes("response.reasoning_summary_text.delta"));
        for (const type of ["response.reasoning_text.done", "response.reasoning_summary_text.done", "response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done"]) {
            assert.ok(types.includes(type), `missing ${type}`);
        }
        assert.equal(types.at(-1), "response.completed");
        const reasoning = events.filter((event) => event.type === "response.reasoning_text.delta").map((event) => event["delta"]).join("");
        const text = events.filter((event) => event.type === "response.output_text.delta").map((event) => event["delta"]).join("");
        assert.equal(reasoning, "Let me add.");
        assert.equal(text, "The answer is 4.");
        const final = events.at(-1)!["response"] as ResponseWire;
        assert.equal(final.status, "completed");
        assert.deepEqual((final.output[0] as { summary: unknown }).summary, [{ type: "summary_text", text: "Let me add." }]);
        assert.equal(final.output_text, "The answer is 4.");
        assert.ok(final.usage.output_tokens > 0);
        // No marker leaks into any delta.
        assert.ok(events.every((event) => !String(event["delta"] ?? "").includes("<")));
    });

    it("a function tool call becomes a function_call item; its output continues the conversation", async () => {
        const first = await create(server, { input: "Weather in Lagos?", tools: [weatherTool], grammar: exact(callText("get_weather", { city: "Lagos" })) });
        const call = first.output.find((item) => item["type"] === "function_call")!;
        assert.match(String(call["id"]), /^fc_/);
        assert.match(String(call["call_id"]), /^call_/);
        assert.equal(call["name"], "get_weather");
        assert.deepEqual(JSON.parse(String(call["arguments"])), { city: "Lagos" });
        assert.equal(first.output_text, "");

        const second = await create(server, {
            previous_response_id: first.id, tools: [weatherTool],
            input: [{ type: "function_call_output", call_id: call["call_id"], output: "{\"sky\": \"sunny\"}" }],
            grammar: exact("Sunny.\n</think>\n\nIt is sunny in Lagos.")
        });
        assert.equal(second.output_text, "It is sunny in Lagos.");
        assert.equal(second.previous_response_id, first.id);
        assert.ok(second.usage.input_tokens > first.usage.input_tokens, "the earlier turns are in the prompt");
        assert.ok(second.usage.input_tokens_details.cached_tokens > 0, "the continuation reuses the earlier prompt from the slot's cache");
    });

    it("a custom (freeform) tool is served as a one-string function and answered as a custom_tool_call", async () => {
        const patch = "*** Begin Patch\n*** End Patch\n";
        const response = await create(server, {
            input: "Apply the patch.", tools: [{ type: "custom", name: "apply_patch", description: "Apply a patch", format: { type: "grammar", syntax: "lark", definition: "start: /.+/" } }],
            grammar: exact(callText("apply_patch", { input: patch })), max_output_tokens: 256
        });
        const call = response.output.find((item) => item["type"] === "custom_tool_call")!;
        assert.equal(call["name"], "apply_patch");
        assert.equal(call["input"], patch);
        assert.match(String(call["id"]), /^ctc_/);
    });

    it("tool_choice 'required' and text.format json_schema are enforced by grammar on the answer", async () => {
        const forced = await create(server, {
            // A bounded city and one call: a random model's unbounded string could run past max_output_tokens.
            input: "Weather?", tools: [{ ...weatherTool, parameters: { ...weatherTool.parameters, properties: { city: { type: "string", maxLength: 12 } } } }],
            tool_choice: "required", parallel_tool_calls: false, temperature: 1, seed: 3,
            reasoning: { effort: "none" }, max_output_tokens: 200
        });
        const call = forced.output.find((item) => item["type"] === "function_call");
        assert.ok(call !== undefined, JSON.stringify(forced.output));
        assert.equal(typeof (JSON.parse(String(call["arguments"])) as { city: unknown }).city, "string");

        const json = await create(server, {
            input: "A number?", reasoning: { effort: "minimal" }, temperature: 1, seed: 4, max_output_tokens: 200,
            text: { format: { type: "json_schema", name: "n", strict: true, schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false } } }
        });
        assert.equal(json.status, "completed");
        assert.equal(typeof (JSON.parse(json.output_text) as { n: unknown }).n, "number");
        assert.deepEqual(json.output.map((item) => item["type"]), ["message"], "effort none/minimal turns thinking off");
    });

    it("include reasoning.encrypted_content returns the trace in a form that can be sent back (store: false)", async () => {
        const first = await create(server, { input: "What is 2+2?", store: false, include: ["reasoning.encrypted_content"], grammar: exact(answerText) });
        const reasoning = first.output[0]!;
        assert.equal(typeof reasoning["encrypted_content"], "string");
        const getStored = await server.request(`/v1/responses/${first.id}`);
        await expectError(getStored, 404, "response_id");
        // Sent back with only encrypted_content (and an empty summary), as Codex does.
        const continued = await create(server, {
            store: false,
            input: [
                { type: "message", role: "user", content: [{ type: "input_text", text: "What is 2+2?" }] },
                { type: "reasoning", id: reasoning["id"], summary: [], encrypted_content: reasoning["encrypted_content"] },
                { type: "message", role: "assistant", content: [{ type: "output_text", text: first.output_text }] },
                { type: "message", role: "user", content: "And 3+3?" }
            ],
            grammar: exact("Six.\n</think>\n\n6")
        });
        assert.equal(continued.output_text, "6");
        const onlySummary = await server.post("/v1/responses", {
            input: [{ type: "reasoning", summary: [{ type: "summary_text", text: "earlier thought" }] }, { role: "user", content: "hi" }],
            grammar: exact("x\n</think>\n\ny"), max_output_tokens: 16
        });
        assert.equal(onlySummary.status, 200, await onlySummary.clone().text());
    });

    it("max_output_tokens cuts: status incomplete with reason max_output_tokens", async () => {
        const response = await create(server, { input: "Go", grammar: exact("a b c d e f g h i j k l m n o p"), max_output_tokens: 3 });
        assert.equal(response.status, "incomplete");
        assert.deepEqual(response.incomplete_details, { reason: "max_output_tokens" });
        const events = await stream(server, { input: "Go", grammar: exact("a b c d e f g h i j k l m n o p"), max_output_tokens: 3 });
        assert.equal(events.at(-1)!.type, "response.incomplete");
    });

    it("stores responses: GET, input_items, DELETE; unknown ids are 404s in OpenAI's shape", async () => {
        const created = await create(server, { input: [{ role: "user", content: "What is 2+2?" }], grammar: exact(answerText) });
        const got = await (await server.request(`/v1/responses/${created.id}`)).json() as ResponseWire;
        assert.deepEqual(got, created);
        const items = await (await server.request(`/v1/responses/${created.id}/input_items`)).json() as { object: string; data: Record<string, unknown>[]; has_more: boolean };
        assert.equal(items.object, "list");
        assert.equal(items.data.length, 1);
        assert.equal(items.data[0]!["role"], "user");
        assert.match(String(items.data[0]!["id"]), /^msg_/);
        const deleted = await (await server.request(`/v1/responses/${created.id}`, { method: "DELETE" })).json();
        assert.deepEqual(deleted, { id: created.id, object: "response", deleted: true });
        await expectError(await server.request(`/v1/responses/${created.id}`), 404, "response_id");
        await expectError(await server.post("/v1/responses", { input: "x", previous_response_id: "resp_unknown" }), 404, "previous_response_id");
        await expectError(await server.post(`/v1/responses/${created.id}/cancel`, {}), 404, "response_id");
    });

    it("input_tokens counts the prompt as a response would", async () => {
        const body = { input: "What is 2+2?", instructions: "Be brief." };
        const counted = await (await server.post("/v1/responses/input_tokens", body)).json() as { object: string; input_tokens: number };
        assert.equal(counted.object, "response.input_tokens");
        const response = await create(server, { ...body, grammar: exact(answerText) });
        assert.equal(counted.input_tokens, response.usage.input_tokens);
    });

    it("refuses what it cannot serve with a 400 naming the param", async () => {
        await expectError(await server.post("/v1/responses", { input: "x", tools: [{ type: "web_search" }] }), 400, "tools[0].type");
        await expectError(await server.post("/v1/responses", { input: "x", tools: [weatherTool, { type: "file_search", vector_store_ids: [] }] }), 400, "tools[1].type");
        await expectError(await server.post("/v1/responses", { input: "x", background: true }), 400, "background");
        await expectError(await server.post("/v1/responses", { input: [{ type: "message", role: "user", content: [{ type: "input_image", image_url: "x" }] }] }), 400, "input[0].content[0].type");
        await expectError(await server.post("/v1/responses", { input: "x", text: { format: { type: "json_schema", name: "n", schema: { type: "string", pattern: "a+" } } } }), 400, "text.format.schema");
        await expectError(await server.post("/v1/responses", { input: "x", tool_choice: { type: "function", name: "nope" }, tools: [weatherTool] }), 400, "tool_choice.name");
        await expectError(await server.post("/v1/responses", { input: "x", temperature: 9 }), 400, "temperature");
        await expectError(await server.post("/v1/responses", { input: [{ type: "item_reference", id: "msg_gone" }] }), 404, "input[0].id");
        await expectError(await server.post("/v1/responses", { input: [{ type: "function_call", name: "f" }] }), 400, "input[0].call_id");
        await expectError(await server.post("/v1/responses", { input: "x", logit_bias: { 999999999: 5 } }), 400, "logit_bias");
    });

    it("Maple's seed and logit_bias work as on chat", async () => {
        const body = { input: "Tell me something.", temperature: 1, seed: 11, max_output_tokens: 12, reasoning: { effort: "none" } };
        const [first, second] = [await create(server, body), await create(server, body)];
        assert.equal(first.output_text, second.output_text, "the same seed samples the same text");
        const zToken = (await (await server.post("/tokenize", { content: "Z", add_special: false })).json() as { tokens: number[] }).tokens;
        assert.equal(zToken.length, 1);
        const forced = await create(server, { ...body, max_output_tokens: 4, logit_bias: { [String(zToken[0])]: 100 } });
        assert.equal(forced.output_text, "ZZZZ", "a +100 bias all but forces the token");
    });

    it("POST /v1/responses/{id}/cancel stops a streaming response: response.failed with status cancelled, stored as such", async () => {
        const response = await server.post("/v1/responses", { input: "Count", stream: true, max_output_tokens: 256, ignore_eos: true, temperature: 0 });
        assert.equal(response.status, 200);
        const reader = response.body!.getReader();
        const decoder = new TextDecoder();
        let text = "";
        let id: string | undefined;
        for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            text += decoder.decode(value, { stream: true });
            const match = /"id":"(resp_[0-9a-f]+)"/.exec(text);
            if (id === undefined && match !== null && text.includes("response.reasoning_text.delta")) {
                id = match[1]!;
                const live = await (await server.request(`/v1/responses/${id}`)).json() as ResponseWire;
                assert.equal(live.status, "in_progress");
                const cancelled = await (await server.post(`/v1/responses/${id}/cancel`, {})).json() as ResponseWire;
                assert.equal(cancelled.status, "cancelled");
            }
        }
        assert.ok(id !== undefined, "the stream started");
        const last = JSON.parse(parseSse(text).at(-1)!.data) as EventWire;
        assert.equal(last.type, "response.failed");
        assert.equal((last["response"] as ResponseWire).status, "cancelled");
        const stored = await (await server.request(`/v1/responses/${id}`)).json() as ResponseWire;
        assert.equal(stored.status, "cancelled");
        assert.ok(stored.output.length > 0, "the output generated before the cancel is kept");
    });
});

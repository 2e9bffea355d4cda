import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { hermesParser } from "../helpers/hermesParser.js";
import type { OutputPart } from "../../src/chatFormat/types.js";
import { InvalidRequestError } from "../../src/errors.js";
import { finalResponse, ResponseBuilder, ResponseEventWriter, type ResponseEvent } from "../../src/responses/responseEvents.js";
import { decodeReasoning } from "../../src/responses/reasoningCarrier.js";
import type { ResponsesTool } from "../../src/responses/responsesRequest.js";

/**
 * The parts → events writer, fed by the real output parser with a recorded raw output split at
 * every boundary (one cut, then every pair of cuts): whatever the split, the events fold back to
 * the same items and text, in a well-formed order.
 */

const tools: ResponsesTool[] = [
    { kind: "function", definition: { name: "get_weather", parameters: { type: "object" } } },
    { kind: "function", namespace: "crm", definition: { name: "find_customer", parameters: { type: "object" } } },
    { kind: "custom", definition: { name: "apply_patch", parameters: { type: "object" } } }
];

const recorded = "Let me think.\nTwo calls.\n</think>\n\nChecking now.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lagos\"}}\n</tool_call>\n"
    + "<tool_call>\n{\"name\": \"find_customer\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"apply_patch\", \"arguments\": {\"input\": \"*** Begin Patch\\n\"}}\n</tool_call>";

function writer(options: { encrypted?: boolean } = {}): ResponseEventWriter {
    let counter = 0;
    return new ResponseEventWriter({ id: "resp_1", createdAt: 1, model: "m", echo: { store: true } }, {
        tools, encryptedReasoning: options.encrypted ?? false, newId: (prefix) => `${prefix}_${counter++}`
    });
}

/** The output parser's parts as the generation core yields them, into the writer. */
function feed(events: ResponseEventWriter, parts: readonly OutputPart[]): ResponseEvent[] {
    let calls = 0;
    // The core never yields an empty delta.
    return parts.filter((part) => part.type === "tool_call" || part.text !== "").flatMap((part) => events.part(part.type === "tool_call" ? { type: "tool-call", index: calls++, name: part.name, arguments: part.arguments }
        : { type: part.type === "reasoning" ? "reasoning-delta" : "text-delta", text: part.text }));
}

function replay(pieces: string[], options: { encrypted?: boolean } = {}): ResponseEvent[] {
    const parser = hermesParser({ startsInReasoning: true, parseToolCalls: true });
    const events = writer(options);
    const all = [...events.start()];
    for (const piece of pieces) all.push(...feed(events, parser.push(piece)));
    all.push(...feed(events, parser.flush()));
    all.push(...events.finish("stop", { promptTokens: 10, completionTokens: 20, cachedTokens: 4, reasoningTokens: 5 }, 2));
    return all;
}

/** An event as the client's JSON parser hands it over. */
function fields(event: ResponseEvent): Record<string, unknown> {
    return event as unknown as Record<string, unknown>;
}

/** Folds events back into items the way a client does, checking their order on the way. */
function fold(events: ResponseEvent[]): { items: Record<string, unknown>[]; reasoning: string; summary: string; text: string; args: string[] } {
    assert.deepEqual(events.map((event) => event.sequence_number), events.map((_, index) => index));
    assert.deepEqual(events.slice(0, 2).map((event) => event.type), ["response.created", "response.in_progress"]);
    const items: Record<string, unknown>[] = [];
    let open: number | undefined;
    let reasoning = "";
    let summary = "";
    let text = "";
    const args: string[] = [];
    for (const typed of events.slice(2, -1)) {
        const event = fields(typed);
        if (typed.type === "response.output_item.added") {
            assert.equal(open, undefined, "an item opens only after the previous one is done");
            open = event["output_index"] as number;
            assert.equal(open, items.length);
            items.push(event["item"] as Record<string, unknown>);
            continue;
        }
        assert.equal(event["output_index"], open, `${typed.type} belongs to the open item`);
        if (typed.type === "response.output_item.done") {
            items[open!] = event["item"] as Record<string, unknown>;
            open = undefined;
        } else if (typed.type === "response.reasoning_text.delta") {
            reasoning += event["delta"] as string;
        } else if (typed.type === "response.reasoning_summary_text.delta") {
            summary += event["delta"] as string;
        } else if (typed.type === "response.output_text.delta") {
            text += event["delta"] as string;
        } else if (typed.type === "response.function_call_arguments.delta" || typed.type === "response.custom_tool_call_input.delta") {
            args.push(event["delta"] as string);
        }
    }
    assert.equal(open, undefined, "every item is done before the response completes");
    return { items, reasoning, summary, text, args };
}

describe("ResponseEventWriter", () => {
    const whole = fold(replay([recorded], { encrypted: true }));

    it("writes reasoning, message, function, namespaced and custom calls as items in order", () => {
        assert.deepEqual(whole.items.map((item) => [item["type"], item["id"]]), [
            ["reasoning", "rs_0"], ["message", "msg_1"], ["function_call", "fc_3"], ["function_call", "fc_5"], ["custom_tool_call", "ctc_7"]
        ]);
        assert.equal(whole.reasoning, "Let me think.\nTwo calls.");
        assert.equal(whole.summary, whole.reasoning);
        assert.equal(whole.text, "Checking now.");
        const [reasoning, message, weather, customer, patch] = whole.items;
        assert.deepEqual(reasoning!["content"], [{ type: "reasoning_text", text: whole.reasoning }]);
        assert.deepEqual(reasoning!["summary"], [{ type: "summary_text", text: whole.reasoning }]);
        assert.equal(decodeReasoning(String(reasoning!["encrypted_content"])), whole.reasoning);
        assert.deepEqual(message!["content"], [{ type: "output_text", text: "Checking now.", annotations: [], logprobs: [] }]);
        assert.deepEqual(weather, { id: "fc_3", type: "function_call", status: "completed", call_id: "call_2", name: "get_weather", arguments: "{\"city\":\"Lagos\"}" });
        assert.equal(customer!["namespace"], "crm");
        assert.deepEqual(patch, { id: "ctc_7", type: "custom_tool_call", status: "completed", call_id: "call_6", name: "apply_patch", input: "*** Begin Patch\n" });
    });

    it("gives the same items and text whatever the split of the raw output (every single and double cut)", () => {
        const expected = JSON.stringify(whole);
        for (let first = 1; first < recorded.length; first++) {
            assert.equal(JSON.stringify(fold(replay([recorded.slice(0, first), recorded.slice(first)], { encrypted: true }))), expected, `cut at ${first}`);
        }
        for (let first = 1; first < recorded.length; first += 7) {
            for (let second = first + 1; second < recorded.length; second++) {
                const pieces = [recorded.slice(0, first), recorded.slice(first, second), recorded.slice(second)];
                assert.equal(JSON.stringify(fold(replay(pieces, { encrypted: true }))), expected, `cuts at ${first}, ${second}`);
            }
        }
        const perCharacter = fold(replay([...recorded], { encrypted: true }));
        assert.equal(JSON.stringify(perCharacter), expected);
    });

    it("ends with response.completed carrying the same output and the usage", () => {
        const events = replay([recorded]);
        const final = events.at(-1)!;
        assert.equal(final.type, "response.completed");
        const response = fields(final)["response"] as Record<string, unknown>;
        assert.equal(response["status"], "completed");
        assert.equal(response["output_text"], "Checking now.");
        assert.deepEqual(response["output"], fold(events).items);
        assert.deepEqual(response["usage"], {
            input_tokens: 10, input_tokens_details: { cached_tokens: 4 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 5 }, total_tokens: 30
        });
    });

    it("a cut by max_output_tokens ends incomplete; a failure is an error event then response.failed", () => {
        const cut = writer();
        const parser = hermesParser({ startsInReasoning: true, parseToolCalls: false });
        const events = [...cut.start(), ...feed(cut, parser.push("half a thou")), ...cut.finish("length", { promptTokens: 1, completionTokens: 3, cachedTokens: 0, reasoningTokens: 3 }, 2)];
        assert.equal(events.at(-2)!.type, "response.output_item.done");
        assert.equal((fields(events.at(-2)!)["item"] as Record<string, unknown>)["status"], "incomplete");
        assert.equal(events.at(-1)!.type, "response.incomplete");
        assert.deepEqual((fields(events.at(-1)!)["response"] as Record<string, unknown>)["incomplete_details"], { reason: "max_output_tokens" });

        const failing = writer();
        const started = [...failing.start(), ...feed(failing, [{ type: "content", text: "Hel" }])];
        const failed = failing.fail(new InvalidRequestError("boom", "input"));
        const types = failed.map((event) => event.type);
        assert.deepEqual(types.slice(-2), ["error", "response.failed"]);
        assert.deepEqual(failed.at(-2), { type: "error", sequence_number: started.length + types.length - 2, code: "invalid_request_error", message: "boom", param: "input" });
        assert.equal((fields(failed.at(-1)!)["response"] as Record<string, unknown>)["status"], "failed");
    });

    it("the whole response is the fold of the stream's events; while it runs, GET's snapshot holds the items as announced", () => {
        const events = writer();
        const parser = hermesParser({ startsInReasoning: true, parseToolCalls: true });
        const sent = [...events.start()];
        const builder = new ResponseBuilder();
        builder.add(sent);
        for (const piece of [...recorded]) {
            const step = feed(events, parser.push(piece));
            sent.push(...step);
            builder.add(step);
            assert.deepEqual(events.response("in_progress").output, builder.items, "the writer's own items are the fold of what it sent");
        }
        const end = [...feed(events, parser.flush()), ...events.finish("stop", { promptTokens: 1, completionTokens: 2, cachedTokens: 0, reasoningTokens: 1 }, 3)];
        sent.push(...end);
        builder.add(end);
        assert.deepEqual(builder.build(), fields(sent.at(-1)!)["response"]);
        assert.deepEqual(finalResponse(sent).output, fold(sent).items);
        const added = sent.filter((event) => event.type === "response.output_item.added").map((event) => fields(event)["item"] as Record<string, unknown>);
        assert.ok(!("summary" in added[1]!), "a message item has no summary (ResponseOutputMessage has none)");
    });
});

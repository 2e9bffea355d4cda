import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ChatChoice } from "../../src/core/chatChoice.js";
import type { GenerationSummary } from "../../src/core/generateText.js";
import { MessageBuilder, MessageEventWriter, stopReason, type MessagesEvent } from "../../src/anthropic/messageEvents.js";
import { thinkingFromSignature, thinkingSignature } from "../../src/anthropic/thinkingSignature.js";
import { hermesFormat } from "../../src/chatFormat/formats/hermes.js";
import { someTool } from "../helpers/hermesParser.js";

/**
 * The Messages event writer, fed the parts of the core's chat reader (its output parser) from
 * recorded model outputs split at every boundary: whatever the split, the events follow Anthropic's grammar (indices, block
 * start/delta/stop, the thinking block's signature last) and fold into the same message.
 */

/** Maple's template: the prompt opens the think block; tools were offered. */
const maplePrompt = { text: "<|im_start|>assistant\n<think>\n", format: hermesFormat, startsInReasoning: true, mayOpenReasoning: false, tools: [someTool] };
const summary = (overrides: Partial<GenerationSummary> = {}): GenerationSummary => ({
    finishReason: "stop", matchedStop: 151645, promptTokens: 40, cachedTokens: 8, completionTokens: 20, queuedMs: 0, ...overrides
});

interface Fixture {
    name: string;
    text: string;
    /** The message's content blocks, tool_use ids left out (they are fresh each time). */
    content: Record<string, unknown>[];
    stopReason: string;
    end?: Partial<GenerationSummary>;
}

const fixtures: Fixture[] = [
    {
        name: "thinking then text",
        text: "The user greets me.\n</think>\n\nHello! How can I help?",
        content: [{ type: "thinking", thinking: "The user greets me." }, { type: "text", text: "Hello! How can I help?" }],
        stopReason: "end_turn"
    },
    {
        name: "thinking, text, two tool calls",
        text: "Need weather.\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lagos\"}}\n</tool_call>\n"
            + "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
        content: [
            { type: "thinking", thinking: "Need weather." },
            { type: "text", text: "Let me check." },
            { type: "tool_use", name: "get_weather", input: { city: "Lagos" } },
            { type: "tool_use", name: "get_time", input: {} }
        ],
        stopReason: "tool_use"
    },
    {
        name: "cut off mid-thought",
        text: "Step 1: read the question. Step 2:",
        content: [{ type: "thinking", thinking: "Step 1: read the question. Step 2:" }],
        stopReason: "max_tokens",
        end: { finishReason: "length", matchedStop: null }
    },
    {
        name: "stopped by a stop sequence",
        text: "ok\n</think>\n\nThe answer is",
        content: [{ type: "thinking", thinking: "ok" }, { type: "text", text: "The answer is" }],
        stopReason: "stop_sequence",
        end: { matchedStop: "42" }
    },
    {
        name: "only a tool call, no thinking",
        text: "</think>\n\n<tool_call>\n{\"name\": \"ping\", \"arguments\": null}\n</tool_call>",
        content: [{ type: "tool_use", name: "ping", input: {} }],
        stopReason: "tool_use"
    }
];

/** Runs the text through the chat reader in `chunks` (one token each), and its parts through the writer. */
function replay(chunks: readonly string[], fixture: Fixture, omitThinking = false): MessagesEvent[] {
    const reader = new ChatChoice(maplePrompt, undefined, true, undefined);
    const writer = new MessageEventWriter({ id: "msg_test", model: "maple-preview", omitThinking });
    const events = writer.start({ promptTokens: 40, cachedTokens: 8 });
    const write = (parts: ReturnType<ChatChoice["read"]>): void => parts.forEach((part) => events.push(...writer.part(part)));
    for (const chunk of chunks) write(reader.read({ text: chunk, token: { token: 1 }, textTokens: [{ token: 1 }] }));
    const end = reader.end(summary(fixture.end));
    write([...end.held, end.finish]);
    return events;
}

/** An event's data as the client's JSON parser hands it over. */
function fields(event: MessagesEvent): Record<string, unknown> {
    return event.data as unknown as Record<string, unknown>;
}

/** Checks the event grammar Anthropic's clients rely on; returns the blocks' types in order. */
function checkGrammar(events: readonly MessagesEvent[]): string[] {
    assert.equal(events[0]!.event, "message_start");
    assert.deepEqual(events.slice(-2).map((event) => event.event), ["message_delta", "message_stop"]);
    const types: string[] = [];
    let open: { index: number; type: string; sawSignature: boolean } | undefined;
    for (const { event, data: typed } of events.slice(1, -2)) {
        const data = typed as unknown as Record<string, unknown>;
        assert.equal(data["type"], event, "the event name is the data's type");
        const index = data["index"] as number;
        if (event === "content_block_start") {
            assert.equal(open, undefined, "a block starts only after the previous one stopped");
            assert.equal(index, types.length, "blocks are numbered 0, 1, 2, … in order");
            const type = (data["content_block"] as { type: string }).type;
            types.push(type);
            open = { index, type, sawSignature: false };
        } else if (event === "content_block_delta") {
            assert.equal(index, open?.index, "a delta belongs to the open block");
            const delta = data["delta"] as { type: string };
            const allowed = { thinking: ["thinking_delta", "signature_delta"], text: ["text_delta"], tool_use: ["input_json_delta"] }[open!.type];
            assert.ok(allowed?.includes(delta.type), `${delta.type} in a ${open!.type} block`);
            assert.ok(!open!.sawSignature, "the signature is the thinking block's last delta");
            if (delta.type === "signature_delta") open!.sawSignature = true;
        } else {
            assert.equal(event, "content_block_stop");
            assert.equal(index, open?.index);
            if (open!.type === "thinking") assert.ok(open!.sawSignature, "a thinking block carries its signature");
            open = undefined;
        }
    }
    assert.equal(open, undefined, "every block is stopped before message_delta");
    return types;
}

function withoutIds(content: Record<string, unknown>[]): Record<string, unknown>[] {
    return content.map((block) => {
        const { id, signature, ...rest } = block;
        if (block["type"] === "tool_use") assert.match(String(id), /^toolu_/);
        if (block["type"] === "thinking") assert.equal(thinkingFromSignature(String(signature)), block["thinking"]);
        return rest;
    });
}

describe("Messages event writer", () => {
    for (const fixture of fixtures) {
        it(`${fixture.name}: the same events and message at every split`, () => {
            const whole = replay([fixture.text], fixture);
            const wholeTypes = checkGrammar(whole);
            const splits = [[...fixture.text]];
            for (let at = 1; at < fixture.text.length; at++) splits.push([fixture.text.slice(0, at), fixture.text.slice(at)]);
            for (const chunks of splits) {
                const events = replay(chunks, fixture);
                assert.deepEqual(checkGrammar(events), wholeTypes, `split ${JSON.stringify(chunks.slice(0, 2))}`);
                const builder = new MessageBuilder();
                builder.add(events);
                const message = builder.build() as { content: Record<string, unknown>[]; stop_reason: string };
                assert.deepEqual(withoutIds(message.content), fixture.content);
                assert.equal(message.stop_reason, fixture.stopReason);
            }
        });
    }

    it("the message: id, role, stop sequence and usage (input excludes the cached prefix)", () => {
        const fixture = fixtures[3]!;
        const builder = new MessageBuilder();
        builder.add(replay([fixture.text], fixture));
        const message = builder.build();
        assert.equal(message["id"], "msg_test");
        assert.equal(message["type"], "message");
        assert.equal(message["role"], "assistant");
        assert.equal(message["model"], "maple-preview");
        assert.equal(message["stop_sequence"], "42");
        const usage = message["usage"] as Record<string, unknown>;
        assert.deepEqual({ ...usage, output_tokens_details: undefined }, {
            input_tokens: 32, cache_creation_input_tokens: 0, cache_read_input_tokens: 8, output_tokens: 20, output_tokens_details: undefined
        });
        // Every piece of the thought counted as a reasoning token (one token per replayed chunk).
        assert.ok((usage["output_tokens_details"] as { thinking_tokens: number }).thinking_tokens > 0);
    });

    it("message_start carries the prompt's usage; message_delta the final counts", () => {
        const events = replay(["hi\n</think>\n\nyo"], fixtures[0]!);
        const start = fields(events[0]!)["message"] as Record<string, unknown>;
        assert.deepEqual(start["content"], []);
        assert.equal(start["stop_reason"], null);
        assert.deepEqual(start["usage"], { input_tokens: 32, cache_creation_input_tokens: 0, cache_read_input_tokens: 8, output_tokens: 0 });
        const delta = fields(events.at(-2)!);
        assert.deepEqual(delta["delta"], { stop_reason: "end_turn", stop_sequence: null });
        assert.equal((delta["usage"] as Record<string, number>)["output_tokens"], 20);
    });

    it("display omitted: thinking blocks have no text, and the signature still carries it", () => {
        const fixture = fixtures[1]!;
        const events = replay([fixture.text], fixture, true);
        checkGrammar(events);
        assert.ok(!events.some((event) => (fields(event)["delta"] as { type?: string } | undefined)?.type === "thinking_delta"));
        const builder = new MessageBuilder();
        builder.add(events);
        const [thinking] = builder.build()["content"] as { thinking: string; signature: string }[];
        assert.equal(thinking!.thinking, "");
        assert.equal(thinkingFromSignature(thinking!.signature), "Need weather.");
    });

    it("stop reasons: length wins, then tool calls, then a stop string, else end_turn", () => {
        assert.equal(stopReason({ reason: "length", matchedStop: null, toolCalls: 2 }), "max_tokens");
        assert.equal(stopReason({ reason: "stop", matchedStop: "END", toolCalls: 1 }), "tool_use");
        assert.equal(stopReason({ reason: "stop", matchedStop: "END", toolCalls: 0 }), "stop_sequence");
        assert.equal(stopReason({ reason: "stop", matchedStop: 151645, toolCalls: 0 }), "end_turn");
    });

    it("signatures round-trip any text, and foreign signatures are not read", () => {
        for (const text of ["", "plain", "ünïcödé 🌍 and a\nnewline", "x".repeat(10_000)]) {
            assert.equal(thinkingFromSignature(thinkingSignature(text)), text);
        }
        assert.equal(thinkingFromSignature("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"), undefined);
        assert.equal(thinkingFromSignature("maple1.%%%"), undefined, "a damaged signature is not read, and does not throw");
    });
});

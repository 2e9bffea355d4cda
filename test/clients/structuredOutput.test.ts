import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, Output } from "ai";
import { zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";
import { startTestServer, type TestServer } from "../helpers/testServer.js";

/**
 * Structured output as the SDKs ask for it, against the random-weight model: the openai SDK's
 * `chat.completions.parse` with a zod schema (`zodResponseFormat`: definitions, `$ref`s, nullable
 * `anyOf`, `additionalProperties: false`), and the AI SDK's `Output.object` with a provider
 * created with `supportsStructuredOutputs: true` (`json_schema`, strict). The grammar makes the
 * model's answer parse and validate in the SDK itself. Thinking is disabled through the extra
 * body field `chat_template_kwargs`, since a random model never closes its reasoning.
 */

const noThinking = { chat_template_kwargs: { enable_thinking: false } };

// Bounded strings and lists: a random model's strings would otherwise run to max_tokens.
const Item = z.object({ label: z.string().min(1).max(8), kind: z.enum(["book", "pen", "cup"]) });
const Order = z.object({
    title: z.string().max(10),
    count: z.number().int(),
    paid: z.boolean(),
    items: z.array(Item).max(2),
    first: Item,
    note: z.string().max(6).nullable()
});

describe("structured output through the SDKs", () => {
    let server: TestServer;

    before(async () => {
        server = await startTestServer({ parallel: 1 });
    });
    after(async () => server.close());

    it("openai: chat.completions.parse with zodResponseFormat gives a parsed, schema-valid object", async () => {
        for (const seed of [1, 2, 3]) {
            const completion = await server.client.chat.completions.parse({
                model: "maple-preview",
                messages: [{ role: "user", content: "Describe an order." }],
                response_format: zodResponseFormat(Order, "order"),
                temperature: 1,
                seed,
                max_tokens: 400,
                // The SDK types do not know Maple's extra body fields; the SDK sends them as they are.
                ...(noThinking as object)
            });
            const message = completion.choices[0]!.message;
            assert.equal(completion.choices[0]!.finish_reason, "stop");
            assert.ok(message.parsed !== null, message.content ?? "");
            // parse() already validated it with the zod schema; check the zod type once more anyway.
            assert.deepEqual(Order.parse(message.parsed), message.parsed);
        }
    });

    it("AI SDK: generateText with Output.object returns the typed object", async () => {
        const maple = createOpenAICompatible({ name: "maple", baseURL: `${server.url}/v1`, supportsStructuredOutputs: true });
        let sentFormat: unknown;
        const recording = createOpenAICompatible({
            name: "maple", baseURL: `${server.url}/v1`, supportsStructuredOutputs: true,
            fetch: async (input, init) => {
                sentFormat = (JSON.parse(String(init?.body)) as { response_format?: unknown }).response_format;
                return fetch(input, init);
            }
        });
        for (const [provider, seed] of [[recording, 4], [maple, 5]] as const) {
            const result = await generateText({
                model: provider.chatModel("maple-preview"),
                output: Output.object({ schema: Order }),
                prompt: "Describe an order.",
                temperature: 1,
                seed,
                maxOutputTokens: 400,
                // Keys the provider does not know itself go into the request body as they are.
                providerOptions: { maple: noThinking }
            });
            assert.deepEqual(Order.parse(result.output), result.output);
            assert.equal(result.finishReason, "stop");
        }
        assert.equal((sentFormat as { type: string }).type, "json_schema", "the provider asked for a schema, not json_object");
    });
});

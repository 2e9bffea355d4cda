import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";
import { readSse } from "../helpers/sse.js";

/**
 * `response_format` enforced by grammar on the random-weight maple-tiny, end to end: whatever the
 * model would write, the answer validates against the schema (checked with a real JSON-schema
 * validator). Thinking is disabled (`enable_thinking: false`), since a random model never closes
 * its reasoning; one test forces `</think>` with logit_bias to show the reasoning stays free.
 */

const noThinking = { chat_template_kwargs: { enable_thinking: false } };
const messages = [{ role: "user", content: "Describe an order as JSON." }];

/** Nested objects, enums, arrays, a $ref, a nullable type list and anyOf, with the annotations clients send. */
const orderSchema = {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    title: "Order",
    description: "An order",
    type: "object",
    additionalProperties: false,
    required: ["id", "status", "customer", "items", "note", "discount"],
    properties: {
        id: { type: "integer", description: "Order number" },
        status: { type: "string", enum: ["pending", "shipped", "delivered"] },
        customer: {
            type: "object",
            additionalProperties: false,
            required: ["name", "vip"],
            properties: {
                name: { type: "string", minLength: 1, maxLength: 12 },
                vip: { type: "boolean", default: false },
                address: { $ref: "#/$defs/address" }
            }
        },
        items: {
            type: "array",
            minItems: 1,
            maxItems: 2,
            items: {
                type: "object",
                additionalProperties: false,
                required: ["sku", "quantity", "price", "tags"],
                properties: {
                    sku: { type: "string", maxLength: 6 },
                    quantity: { type: "integer" },
                    price: { type: "number" },
                    tags: { type: "array", maxItems: 1, items: { enum: ["gift", "fragile", "express"] } }
                }
            }
        },
        note: { type: ["string", "null"], maxLength: 10 },
        discount: { anyOf: [{ type: "number" }, { type: "null" }] }
    },
    $defs: {
        address: {
            type: "object",
            additionalProperties: false,
            required: ["city"],
            properties: { city: { type: "string", maxLength: 10 } }
        }
    }
};

interface Completion {
    choices: { message: { content: string | null; reasoning_content?: string | null }; finish_reason: string }[];
    usage: { completion_tokens: number; completion_tokens_details: { reasoning_tokens: number } };
}
interface Chunk {
    choices: { delta: { content?: string; reasoning_content?: string }; finish_reason: string | null }[];
}

const jsonSchemaFormat = (schema: unknown) => ({ type: "json_schema", json_schema: { name: "order", schema, strict: true } });

describe("structured output (response_format)", () => {
    let server: TestServer;
    const validateOrder = new Ajv2020({ allErrors: true }).compile(orderSchema);

    before(async () => {
        server = await startTestServer({ parallel: 1 });
    });
    after(async () => server.close());

    async function chat(body: Record<string, unknown>): Promise<Completion> {
        const response = await server.post("/v1/chat/completions", { messages, max_tokens: 400, temperature: 1, ...noThinking, ...body });
        assert.equal(response.status, 200, await response.clone().text());
        return response.json() as Promise<Completion>;
    }

    function assertValidOrder(content: string | null | undefined, context: string): unknown {
        assert.equal(typeof content, "string", context);
        const value = JSON.parse(content!) as unknown;
        assert.ok(validateOrder(value), `${context}: ${JSON.stringify(validateOrder.errors)}\n${content}`);
        return value;
    }

    // About 15 ms per token on the random model: the grammar rejects nearly every token it samples
    // where the JSON's structure is decided, and is then applied to the whole vocabulary.
    it("json_schema: every answer validates, over many seeds at temperature 1", async () => {
        const statuses = new Set<string>();
        for (let seed = 1; seed <= 10; seed++) {
            const completion = await chat({ seed, response_format: jsonSchemaFormat(orderSchema) });
            const choice = completion.choices[0]!;
            assert.equal(choice.finish_reason, "stop", `seed ${seed}: ${choice.message.content}`);
            const order = assertValidOrder(choice.message.content, `seed ${seed}`) as { status: string };
            statuses.add(order.status);
        }
        // The grammar constrains, it does not fix the answer: the enum's values vary with the seed.
        assert.ok(statuses.size > 1, `statuses: ${[...statuses].join(", ")}`);
    });

    it("json_schema: the streamed chunks concatenate to the same valid document", async () => {
        const body = { seed: 7, response_format: jsonSchemaFormat(orderSchema) };
        // The slot's cache is put in the same state before each run, so both runs compute the same logits.
        const reset = async (): Promise<void> => void await chat({ messages: [{ role: "user", content: "Something else entirely." }], max_tokens: 2 });
        await reset();
        const whole = (await chat(body)).choices[0]!.message.content;
        await reset();
        const response = await server.post("/v1/chat/completions", { messages, max_tokens: 400, temperature: 1, ...noThinking, ...body, stream: true });
        assert.equal(response.status, 200);
        const chunks = (await readSse(response)).filter((event): event is Chunk => event !== "[DONE]");
        const streamed = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join("");
        assert.equal(chunks.at(-1)!.choices[0]!.finish_reason, "stop");
        assertValidOrder(streamed, "stream");
        assert.equal(streamed, whole);
    });

    it("json_object: an answer that ends is a JSON object; one cut by max_tokens is still one being written", async () => {
        let ended = 0;
        for (let seed = 1; seed <= 12; seed++) {
            const choice = (await chat({ seed, max_tokens: 48, response_format: { type: "json_object" } })).choices[0]!;
            const content = choice.message.content ?? "";
            assert.ok(content.startsWith("{"), `seed ${seed}: ${content}`);
            if (choice.finish_reason === "stop") {
                ended += 1;
                const value = JSON.parse(content) as unknown;
                assert.ok(value !== null && typeof value === "object" && !Array.isArray(value), content);
            }
        }
        assert.ok(ended >= 2, `only ${ended} answers ended`);
    });

    it("schemas as clients send them: definitions, nullable, tuples, formats", async () => {
        const schema = {
            $schema: "http://json-schema.org/draft-07/schema#",
            type: "object",
            properties: {
                when: { type: "string", format: "date-time" },
                day: { type: "string", format: "date" },
                pair: { type: "array", items: [{ type: "boolean" }, { $ref: "#/definitions/small" }], additionalItems: false },
                maybe: { type: "integer", nullable: true }
            },
            required: ["when", "day", "pair", "maybe"],
            definitions: { small: { type: "integer", enum: [1, 2, 3] } }
        };
        for (const seed of [1, 2, 3]) {
            const content = (await chat({ seed, response_format: jsonSchemaFormat(schema) })).choices[0]!.message.content!;
            const value = JSON.parse(content) as { when: string; day: string; pair: unknown[]; maybe: number | null };
            assert.match(value.when, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?(Z|[+-]\d{2}:\d{2})$/, content);
            assert.match(value.day, /^\d{4}-\d{2}-\d{2}$/, content);
            assert.equal(value.pair.length, 2);
            assert.equal(typeof value.pair[0], "boolean");
            assert.ok([1, 2, 3].includes(value.pair[1] as number), content);
            assert.ok(value.maybe === null || Number.isInteger(value.maybe), content);
        }
    });

    it("the reasoning stays free: the grammar starts after </think>", async () => {
        // Thinking on (Maple's template opens <think>); logit_bias makes the model close it at once.
        const engine = server.host.state.status === "ready" ? server.host.state.engine : assert.fail("not ready");
        const [thinkClose] = engine.tokenize("</think>", { specialTokens: true });
        const completion = await chat({
            seed: 3, chat_template_kwargs: {}, logit_bias: { [String(thinkClose)]: 100 }, response_format: jsonSchemaFormat(orderSchema)
        });
        const choice = completion.choices[0]!;
        assert.equal(choice.finish_reason, "stop");
        assert.equal(choice.message.reasoning_content, null);
        assert.equal(completion.usage.completion_tokens_details.reasoning_tokens, 1);
        assertValidOrder(choice.message.content, "after reasoning");
    });

    it("refuses a schema keyword the grammar cannot enforce, naming it (400)", async () => {
        const cases: [unknown, string][] = [
            [{ type: "object", properties: { code: { type: "string", pattern: "^[A-Z]+$" } } }, "pattern"],
            [{ type: "object", properties: { age: { type: "integer", minimum: 0 } } }, "minimum"],
            [{ type: "object", properties: { mail: { type: "string", format: "email" } } }, "format"]
        ];
        for (const [schema, keyword] of cases) {
            const response = await server.post("/v1/chat/completions", { messages, ...noThinking, response_format: jsonSchemaFormat(schema) });
            assert.equal(response.status, 400);
            const { error } = await response.json() as WireError;
            assert.equal(error.param, "response_format.json_schema.schema");
            assert.equal(error.type, "invalid_request_error");
            assert.ok(error.message.includes(`'${keyword}'`), error.message);
        }
    });

    it("refuses an unknown response_format type, and grammar beside response_format (400)", async () => {
        const unknown = await server.post("/v1/chat/completions", { messages, response_format: { type: "yaml" } });
        assert.equal(unknown.status, 400);
        assert.equal((await unknown.json() as WireError).error.param, "response_format.type");
        const both = await server.post("/v1/chat/completions", { messages, grammar: "root ::= \"{}\"", response_format: { type: "json_object" } });
        assert.equal(both.status, 400);
        assert.equal((await both.json() as WireError).error.param, "grammar");
    });
});

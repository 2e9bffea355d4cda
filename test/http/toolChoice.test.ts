import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Ajv, type ValidateFunction } from "ajv";
import { startTestServer, type TestServer, type WireError } from "../helpers/testServer.js";
import { readSse } from "../helpers/sse.js";

/**
 * `tool_choice: "required"` and a named function, enforced by grammar on the random-weight
 * maple-tiny (thinking disabled): the answer is tool calls to offered tools whose arguments
 * validate against the tool's `parameters`, whatever the model would have written.
 */

const noThinking = { chat_template_kwargs: { enable_thinking: false } };
const messages = [{ role: "user", content: "What should I wear in Lagos today?" }];

const tools = [
    {
        type: "function",
        function: {
            name: "get_weather",
            description: "Weather for a city",
            parameters: {
                $schema: "http://json-schema.org/draft-07/schema#",
                type: "object",
                additionalProperties: false,
                required: ["city", "unit"],
                properties: {
                    city: { type: "string", minLength: 1, maxLength: 10 },
                    unit: { type: "string", enum: ["celsius", "fahrenheit"] },
                    days: { type: "integer" }
                }
            }
        }
    },
    {
        type: "function",
        function: {
            name: "get_time",
            parameters: { type: "object", properties: { zone: { enum: ["UTC", "WAT"] }, exact: { type: ["boolean", "null"] } } }
        }
    },
    { type: "function", function: { name: "ping" } }
];

interface ToolCallWire { id: string; type: string; function: { name: string; arguments: string } }
interface Completion {
    choices: { message: { content: string | null; tool_calls?: ToolCallWire[] }; finish_reason: string }[];
}

describe("enforced tool_choice", () => {
    let server: TestServer;
    const ajv = new Ajv({ allErrors: true });
    const validators = new Map<string, ValidateFunction>(tools.map((tool) => [
        tool.function.name,
        ajv.compile(tool.function.parameters ?? { type: "object" })
    ]));

    before(async () => {
        server = await startTestServer({ parallel: 1 });
    });
    after(async () => server.close());

    async function chat(body: Record<string, unknown>): Promise<Completion> {
        const response = await server.post("/v1/chat/completions", { messages, tools, max_tokens: 160, temperature: 1, ...noThinking, ...body });
        assert.equal(response.status, 200, await response.clone().text());
        return response.json() as Promise<Completion>;
    }

    function assertValidCall(call: ToolCallWire, offered: string[], context: string): void {
        assert.equal(call.type, "function");
        assert.ok(offered.includes(call.function.name), `${context}: ${call.function.name}`);
        const validate = validators.get(call.function.name)!;
        const args = JSON.parse(call.function.arguments) as unknown;
        assert.ok(validate(args), `${context}: ${call.function.arguments} ${JSON.stringify(validate.errors)}`);
    }

    it("required, parallel_tool_calls false: exactly one valid call to an offered tool, over several seeds", async () => {
        const names = new Set<string>();
        for (let seed = 1; seed <= 8; seed++) {
            const choice = (await chat({ seed, tool_choice: "required", parallel_tool_calls: false })).choices[0]!;
            assert.equal(choice.finish_reason, "tool_calls", `seed ${seed}: ${JSON.stringify(choice.message)}`);
            assert.equal(choice.message.content, null);
            assert.equal(choice.message.tool_calls?.length, 1);
            assertValidCall(choice.message.tool_calls[0]!, ["get_weather", "get_time", "ping"], `seed ${seed}`);
            names.add(choice.message.tool_calls[0]!.function.name);
        }
        assert.ok(names.size > 1, "the model still chooses among the tools");
    });

    it("a named function: calls to that function only, with valid arguments", async () => {
        for (const seed of [1, 2, 3, 4]) {
            const choice = (await chat({ seed, tool_choice: { type: "function", function: { name: "get_weather" } } })).choices[0]!;
            const calls = choice.message.tool_calls ?? [];
            assert.ok(calls.length >= 1, `seed ${seed}: ${JSON.stringify(choice.message)}`);
            for (const call of calls) assertValidCall(call, ["get_weather"], `seed ${seed}`);
            // Parallel calls are allowed; a reply cut by max_tokens may end in a call being written.
            if (choice.finish_reason === "tool_calls") assert.equal(choice.message.content, null);
            else assert.equal(choice.finish_reason, "length");
        }
    });

    it("streams the enforced call as tool_call deltas", async () => {
        const response = await server.post("/v1/chat/completions", {
            messages, tools, max_tokens: 160, temperature: 1, seed: 5, ...noThinking,
            tool_choice: { type: "function", function: { name: "get_time" } }, parallel_tool_calls: false, stream: true
        });
        const chunks = (await readSse(response)).filter((event) => event !== "[DONE]") as {
            choices: { delta: { tool_calls?: (ToolCallWire & { index: number })[]; content?: string }; finish_reason: string | null }[];
        }[];
        const calls = chunks.flatMap((chunk) => chunk.choices[0]?.delta.tool_calls ?? []);
        assert.equal(calls.length, 1);
        assert.equal(calls[0]!.index, 0);
        assertValidCall(calls[0]!, ["get_time"], "stream");
        assert.equal(chunks.at(-1)!.choices[0]!.finish_reason, "tool_calls");
    });

    it("refuses a tool whose parameters use a keyword the grammar cannot enforce (400 naming the tool)", async () => {
        const bad = [...tools, { type: "function", function: { name: "lookup", parameters: { type: "object", properties: { id: { type: "string", pattern: "^[0-9]+$" } } } } }];
        const response = await server.post("/v1/chat/completions", { messages, tools: bad, tool_choice: "required", ...noThinking });
        assert.equal(response.status, 400);
        const { error } = await response.json() as WireError;
        assert.equal(error.param, "tools[3].function.parameters");
        assert.ok(error.message.includes("'pattern'"), error.message);
        // With tool_choice auto the parameters are not enforced, so they are not refused either.
        const auto = await server.post("/v1/chat/completions", { messages, tools: bad, max_tokens: 2, ...noThinking });
        assert.equal(auto.status, 200);
    });
});

import assert from "node:assert/strict";
import { register } from "node:module";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import { startTestServer, type TestServer } from "../helpers/testServer.js";
import { exact } from "../helpers/grammar.js";

// The SDK needs zod 4, Maple has zod 3: see zodForAgents.ts. Imported only after the hook is in place.
register(new URL("../helpers/zodForAgents.js", import.meta.url));
const { Agent, run, setDefaultOpenAIClient, setTracingDisabled, tool } = await import("@openai/agents");

/**
 * The OpenAI Agents SDK (`@openai/agents` 0.14.0: the newest whose `openai` dependency, 6.x,
 * runs on Node 20; later ones need openai 7, Node ≥ 22) against a real Maple server, through its
 * default Responses API model. Its OpenAI client gets a fetch that adds Maple's `grammar` field to
 * each request (from a queue) so the random-weight model writes the exact turns; everything else
 * is the SDK's own request.
 */

describe("OpenAI Agents SDK client", () => {
    let server: TestServer;
    let grammars: string[] = [];
    const bodies: Record<string, unknown>[] = [];
    const statuses: number[] = [];

    before(async () => {
        server = await startTestServer({ maxNewTokensLimit: 256, maxPromptTokens: 900 });
        setTracingDisabled(true);
        setDefaultOpenAIClient(new OpenAI({
            baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0,
            fetch: async (input, init) => {
                const body = JSON.parse(String(init?.body)) as Record<string, unknown>;
                bodies.push(body);
                const next = grammars.shift();
                const response = await fetch(input, { ...init, body: JSON.stringify(next === undefined ? body : { ...body, grammar: exact(next) }) });
                statuses.push(response.status);
                return response;
            }
        }));
    });
    after(async () => server.close());

    it("runs an agent with one function tool to completion", async () => {
        const seen: string[] = [];
        const getWeather = tool({
            name: "get_weather",
            description: "Current weather for a city",
            parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false },
            strict: true,
            execute: async (input) => {
                const { city } = input as { city: string };
                seen.push(city);
                return `${city}: 31 °C, sunny`;
            }
        });
        const agent = new Agent({ name: "Weather", instructions: "Answer with the weather.", model: "maple-preview", tools: [getWeather], modelSettings: { maxTokens: 128 } });
        grammars = [
            "I should call the tool.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lagos\"}}\n</tool_call>",
            "I have it.\n</think>\n\nLagos is 31 °C and sunny."
        ];
        const result = await run(agent, "What is the weather in Lagos?");
        assert.deepEqual(statuses, [200, 200]);
        assert.deepEqual(seen, ["Lagos"]);
        assert.equal(result.finalOutput, "Lagos is 31 °C and sunny.");
        assert.equal(bodies[0]!["instructions"], "Answer with the weather.");
        const sentBack = (bodies[1]!["input"] as { type?: string }[]).map((item) => item.type);
        assert.ok(sentBack.includes("function_call") && sentBack.includes("function_call_output"), JSON.stringify(sentBack));
    });
});

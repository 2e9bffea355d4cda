import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { countChatPromptTokens } from "../../src/core/index.js";
import { ContextLengthExceededError } from "../../src/errors.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";

describe("countChatPromptTokens", () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer();
    });
    after(async () => {
        await server?.close();
    });

    it("counts exactly what a chat request with the same conversation reports as prompt_tokens, without generating", async () => {
        const conversation = {
            messages: [
                { role: "system" as const, content: "You answer briefly." },
                { role: "user" as const, content: "What is the weather in Oslo?" }
            ],
            tools: [{ name: "weather", description: "Current weather", parameters: { type: "object", properties: { city: { type: "string" } } } }],
            templateKwargs: {},
            reasoning: { enabled: false as const }
        };
        const counted = countChatPromptTokens(server.host.requireReady(), conversation);
        const completion = await server.client.chat.completions.create({
            model: "maple-preview",
            messages: conversation.messages,
            tools: conversation.tools.map((tool) => ({ type: "function" as const, function: tool })),
            max_tokens: 1,
            // The same switch as the chat request's: thinking off.
            reasoning_effort: "none"
        });
        assert.equal(counted, completion.usage?.prompt_tokens);
        assert.ok(counted > 20, String(counted));
        assert.equal(server.host.requireReady().scheduler.active, 0);
    });

    it("does not apply the prompt limit (a client learns how far over it is), only the guard against absurd text", () => {
        const model = server.host.requireReady();
        const long = { messages: [{ role: "user" as const, content: "word ".repeat(2000) }], tools: [], templateKwargs: {}, reasoning: undefined };
        assert.ok(countChatPromptTokens(model, long) > model.engine.runtime.contextSize);
        const absurd = { messages: [{ role: "user" as const, content: "x".repeat(model.engine.runtime.contextSize * 40) }], tools: [], templateKwargs: {}, reasoning: undefined };
        assert.throws(() => countChatPromptTokens(model, absurd, { promptParam: "input" }),
            (error: unknown) => error instanceof ContextLengthExceededError && error.param === "input");
    });
});

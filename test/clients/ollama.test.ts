import assert from "node:assert/strict";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Ollama, type ChatRequest, type GenerateRequest, type Message, type Tool } from "ollama";
import { exact as exactly } from "../helpers/grammar.js";
import { standInModelBytes, startFakeHuggingFaceServer, useFakeHubEnvironment, type FakeHuggingFaceServer } from "../helpers/fakeHuggingFaceServer.js";
import { ensureSyntheticModel } from "../../src/models/synthetic/index.js";
import { startTestServer, testModelsDir, type TestServer } from "../helpers/testServer.js";

/**
 * The official `ollama` npm client (0.6.4) against a real Maple. Maple's `grammar` field rides in
 * the request body (the client sends the request object as it is) and makes the random-weight
 * model write exactly the thinking, text and tool calls each test expects.
 */

type WithGrammar<T> = T & { grammar?: string };
const weatherTool: Tool = {
    type: "function",
    function: {
        name: "get_weather", description: "Current weather for a city",
        parameters: { type: "object", properties: { city: { type: "string", description: "the city" } }, required: ["city"] }
    }
};
const smallFile = "fake-owner/ollama-pull/small.gguf";

describe("the ollama npm client", { timeout: 120_000 }, () => {
    let server: TestServer;
    let ollama: Ollama;
    let hub: FakeHuggingFaceServer;
    let tempRoot: string;
    let restoreEnv: () => void;

    before(async () => {
        tempRoot = await mkdtemp(join(tmpdir(), "maple-ollama-test-"));
        hub = await startFakeHuggingFaceServer({ files: { [smallFile]: standInModelBytes(3 * 1024 * 1024 + 7, 5) } });
        restoreEnv = useFakeHubEnvironment(hub.endpoint, tempRoot);
        // The served model by its path, so pulls and deletes go to a models directory of this test's own.
        const modelPath = await ensureSyntheticModel("maple-tiny", testModelsDir);
        server = await startTestServer({ model: modelPath, modelsDir: join(tempRoot, "models") });
        ollama = new Ollama({ host: server.url });
    });
    after(async () => {
        await server.close();
        restoreEnv();
        await hub.close();
        await rm(tempRoot, { recursive: true, force: true });
    });

    const chat = (request: WithGrammar<Omit<ChatRequest, "model" | "stream">>) =>
        ollama.chat({ model: "maple-preview", ...request, stream: false } as ChatRequest & { stream: false });

    it("chat: thinking and content, done_reason and counts", async () => {
        const response = await chat({ messages: [{ role: "user", content: "What is 2+2?" }], think: true, grammar: exactly("Add them.\n</think>\n\nThe answer is 4.") });
        assert.equal(response.model, "maple-preview");
        assert.equal(response.message.role, "assistant");
        assert.equal(response.message.thinking, "Add them.");
        assert.equal(response.message.content, "The answer is 4.");
        assert.equal(response.done, true);
        assert.equal(response.done_reason, "stop");
        assert.ok(response.prompt_eval_count > 0 && response.eval_count > 0);
        assert.ok(response.total_duration >= response.eval_duration && response.eval_duration > 0);
    });

    it("chat with think: false: no thinking, the answer only", async () => {
        const response = await chat({ messages: [{ role: "user", content: "Hi" }], think: false, grammar: exactly("Hello!") });
        assert.equal(response.message.content, "Hello!");
        assert.equal(response.message.thinking, undefined);
    });

    it("chat streamed: thinking pieces, then content pieces, done on the last only", async () => {
        const stream = await ollama.chat({
            model: "maple-preview:latest", messages: [{ role: "user", content: "Hi" }], stream: true,
            grammar: exactly("Greet back.\n</think>\n\nHello there!")
        } as ChatRequest & { stream: true });
        let thinking = "";
        let content = "";
        const done: boolean[] = [];
        for await (const part of stream) {
            thinking += part.message.thinking ?? "";
            content += part.message.content;
            done.push(part.done);
        }
        assert.equal(thinking, "Greet back.");
        assert.equal(content, "Hello there!");
        assert.ok(done.length > 2);
        assert.deepEqual(done.slice(0, -1).filter(Boolean), []);
        assert.equal(done.at(-1), true);
    });

    it("a tool-call round trip: tool_calls with object arguments, then the tool result answered", async () => {
        const messages: Message[] = [{ role: "user", content: "Weather in Lagos?" }];
        const first = await chat({
            messages, tools: [weatherTool],
            grammar: exactly("I need the tool.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lagos\"}}\n</tool_call>")
        });
        const calls = first.message.tool_calls ?? [];
        assert.equal(calls.length, 1);
        assert.equal(calls[0]!.function.name, "get_weather");
        assert.deepEqual(calls[0]!.function.arguments, { city: "Lagos" });
        assert.equal(first.done_reason, "stop");
        messages.push(first.message, { role: "tool", content: "31 °C, sunny", tool_name: "get_weather" });
        const second = await chat({ messages, tools: [weatherTool], grammar: exactly("Got it.\n</think>\n\nLagos: 31 °C and sunny.") });
        assert.equal(second.message.content, "Lagos: 31 °C and sunny.");
        assert.ok(second.prompt_eval_count > first.prompt_eval_count, "the second prompt holds the call and its result");
    });

    it("format with a JSON schema: the answer is that JSON, enforced by grammar", async () => {
        // Bounded: a random model's strings would otherwise run to the token limit.
        const format = {
            type: "object", properties: { name: { type: "string", maxLength: 8 }, age: { type: "integer" }, pet: { enum: ["cat", "dog"] } },
            required: ["name", "age", "pet"], additionalProperties: false
        };
        const response = await chat({ messages: [{ role: "user", content: "Make a person." }], format, think: false, options: { temperature: 1, seed: 3, num_predict: 300 } });
        assert.equal(response.done_reason, "stop");
        const value = JSON.parse(response.message.content) as { name: string; age: number; pet: string };
        assert.deepEqual(Object.keys(value), ["name", "age", "pet"]);
        assert.ok(typeof value.name === "string" && value.name.length <= 8);
        assert.ok(Number.isInteger(value.age));
        assert.ok(["cat", "dog"].includes(value.pet));
    });

    it("generate: response and thinking; raw: the prompt as it is", async () => {
        const response = await ollama.generate({
            model: "maple-preview", prompt: "Name a colour.", system: "Be brief.", stream: false, grammar: exactly("A colour.\n</think>\n\nBlue.")
        } as GenerateRequest & { stream: false });
        assert.equal(response.response, "Blue.");
        assert.equal(response.thinking, "A colour.");
        assert.equal(response.done, true);
        const raw = await ollama.generate({ model: "maple-preview", prompt: "Once upon", raw: true, stream: false, grammar: exactly(" a time") } as GenerateRequest & { stream: false });
        assert.equal(raw.response, " a time");
        assert.equal(raw.thinking, undefined);
    });

    it("generate streamed", async () => {
        const stream = await ollama.generate({ model: "maple-preview", prompt: "Count", stream: true, think: false, grammar: exactly("one two three") } as GenerateRequest & { stream: true });
        let text = "";
        let last;
        for await (const part of stream) {
            text += part.response;
            last = part;
        }
        assert.equal(text, "one two three");
        assert.equal(last?.done_reason, "stop");
    });

    it("list, show, ps and version describe the served model", async () => {
        const { models } = await ollama.list();
        assert.equal(models.length, 1);
        assert.equal(models[0]!.name, "maple-preview:latest");
        assert.equal(models[0]!.details.format, "gguf");
        assert.equal(models[0]!.details.family, "maple");
        assert.ok(models[0]!.size > 0);
        assert.match(models[0]!.digest, /^[0-9a-f]{64}$/);
        const show = await ollama.show({ model: models[0]!.name });
        assert.deepEqual(show.capabilities, ["completion", "tools", "thinking"]);
        assert.match(show.template, /<think>/);
        const info = show.model_info as unknown as Record<string, unknown>;
        assert.equal(info["general.architecture"], "maple");
        assert.equal(info["maple.context_length"], 1024);
        const ps = await ollama.ps();
        assert.equal(ps.models[0]!.name, "maple-preview:latest");
        const { version } = await ollama.version();
        assert.match(version, /^\d+\.\d+\.\d+$/);
    });

    it("VS Code Copilot Chat's Ollama provider, replayed: version gate, tags, show, then chat on /v1 with the listed id", async () => {
        // What its OllamaModelRegistry does (vscode-copilot-chat, byok/vscode-node/ollamaProvider.ts).
        const { version } = await (await server.request("/api/version")).json() as { version: string };
        const [major = 0, minor = 0, patch = 0] = version.split("-")[0]!.split(".").map(Number);
        assert.ok(major > 0 || minor > 6 || (minor === 6 && patch >= 4), `Copilot refuses Ollama below 0.6.4; got ${version}`);
        const { models } = await (await server.request("/api/tags")).json() as { models: { model: string; name: string }[] };
        const id = models[0]!.model;
        const info = await (await server.post("/api/show", { model: id })).json() as { capabilities: string[]; model_info: Record<string, unknown> };
        const contextWindow = info.model_info[`${String(info.model_info["general.architecture"])}.context_length`];
        assert.equal(contextWindow, 1024);
        assert.equal(info.model_info["general.basename"], "maple-preview");
        assert.ok(info.capabilities.includes("tools"), "Copilot offers tool calling by this");
        const body = { model: id, messages: [{ role: "user", content: "Hi" }], max_tokens: 16, grammar: exactly("Hm.\n</think>\n\nHello.") };
        const completion = await (await server.post("/v1/chat/completions", body)).json() as { choices: { message: { content: string } }[] };
        assert.equal(completion.choices[0]!.message.content, "Hello.");
    });

    it("pull from the hub with progress, then delete", async () => {
        const spec = `hf:${smallFile}`;
        const stream = await ollama.pull({ model: spec, stream: true });
        const statuses: string[] = [];
        let completed = 0;
        let total = 0;
        for await (const progress of stream) {
            statuses.push(progress.status);
            if (progress.total) {
                total = progress.total;
                completed = Math.max(completed, progress.completed);
            }
        }
        assert.equal(statuses[0], "pulling manifest");
        assert.equal(statuses.at(-1), "success");
        assert.ok(statuses.includes(`pulling ${spec}`));
        assert.equal(total, 3 * 1024 * 1024 + 7);
        assert.equal(completed, total);
        const again = await ollama.pull({ model: spec, stream: false });
        assert.equal(again.status, "success");
        assert.equal((await ollama.delete({ model: spec })).status, "success");
        await assert.rejects(ollama.delete({ model: spec }), (error: Error & { status_code?: number }) => error.status_code === 404);
        await assert.rejects(stat(join(tempRoot, "models", "hf", "hf_fake-owner_small.gguf")));
    });

    it("errors: the client throws Ollama's message with the status", async () => {
        await assert.rejects(chat({ messages: [{ role: "user", content: "look", images: ["aGVsbG8="] }] }),
            (error: Error & { status_code?: number }) => error.status_code === 400 && /text only/.test(error.message));
        await assert.rejects(ollama.embed({ model: "maple-preview", input: "x" }),
            (error: Error & { status_code?: number }) => error.status_code === 400 && /embedding/.test(error.message));
    });
});

import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import { BadRequestError } from "openai";
import { Ollama } from "ollama";
import { readModelFileFacts } from "../../src/engine/modelFileFacts.js";
import { ensureSyntheticModel } from "../../src/models/synthetic/index.js";
import { exact } from "../helpers/grammar.js";
import { Exposition } from "../helpers/prometheus.js";
import { startTestServer, testModelsDir, type TestServer, type WireError } from "../helpers/testServer.js";
import { waitFor } from "../helpers/waitFor.js";

interface ListedModel {
    id: string;
    loaded: boolean;
    status: string;
    purpose: string | null;
    dimensions?: number;
}

interface Completion {
    model: string;
    system_fingerprint: string;
    choices: { text: string }[];
}

async function complete(server: TestServer, model: string, text: string): Promise<Completion> {
    const response = await server.post("/v1/completions", { model, prompt: "Which model are you?", max_tokens: 32, grammar: exact(text) });
    assert.equal(response.status, 200, await response.clone().text());
    return await response.json() as Completion;
}

async function listModels(server: TestServer): Promise<ListedModel[]> {
    const response = await server.request("/v1/models");
    assert.equal(response.status, 200);
    return (await response.json() as { data: ListedModel[] }).data;
}

/** The cosine of two vectors: 1 for the same direction. */
const dot = (a: readonly number[], b: readonly number[]): number => a.reduce((sum, value, index) => sum + value * (b[index] ?? 0), 0);

describe("two chat models and an embedding model in one server", { timeout: 300_000 }, () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({
            model: "maple=synthetic:maple-tiny",
            models: "synthetic:qwen3-tiny,embed=synthetic:qwen3-embedding-tiny",
            parallel: 1
        });
        await server.models.whenStarted();
    });
    after(async () => server.close());

    it("lists all three, loaded, each with what it is for; the default first", async () => {
        const models = await listModels(server);
        assert.deepEqual(models.map((model) => [model.id, model.loaded, model.purpose]),
            [["maple", true, "chat"], ["qwen3-tiny", true, "chat"], ["embed", true, "embedding"]]);
        const health = await (await server.request("/health")).json() as { model: string; models: { id: string; status: string }[] };
        assert.equal(health.model, "maple");
        assert.deepEqual(health.models.map((model) => [model.id, model.status]), [["maple", "ok"], ["qwen3-tiny", "ok"], ["embed", "ok"]]);
    });

    it("serves each chat model under its own name, from its own file", async () => {
        const maple = await complete(server, "maple", "maple here");
        const qwen = await complete(server, "qwen3-tiny", "qwen here");
        assert.equal(maple.model, "maple");
        assert.equal(maple.choices[0]!.text, "maple here");
        assert.equal(qwen.model, "qwen3-tiny");
        assert.equal(qwen.choices[0]!.text, "qwen here");
        // The fingerprint is of the model file: a different one for each name.
        assert.notEqual(maple.system_fingerprint, qwen.system_fingerprint);
        const unnamed = await server.post("/v1/completions", { prompt: "x", max_tokens: 8, grammar: exact("ok") });
        assert.equal((await unnamed.json() as Completion).system_fingerprint, maple.system_fingerprint, "a request naming no model goes to the default");
        const other = await complete(server, "gpt-4o", "default");
        assert.equal(other.system_fingerprint, maple.system_fingerprint, "an unknown name goes to the default");

        const ollama = new Ollama({ host: server.url });
        const answer = await ollama.generate({ model: "qwen3-tiny", prompt: "x", raw: true, stream: false, grammar: exact("via ollama") } as Parameters<Ollama["generate"]>[0] & { stream: false });
        assert.equal(answer.response, "via ollama");
    });

    it("labels each generation's metrics with the model that served it", async () => {
        const scrape = async (): Promise<Exposition> => new Exposition(await (await server.request("/metrics")).text());
        const before = await scrape();
        const usageOf = async (model: string, text: string): Promise<{ prompt_tokens: number; completion_tokens: number }> => {
            const response = await server.post("/v1/completions", { model, prompt: "Count my tokens.", max_tokens: 32, grammar: exact(text) });
            assert.equal(response.status, 200);
            return (await response.json() as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
        };
        const maple = await usageOf("maple", "one two three four");
        const qwen = await usageOf("qwen3-tiny", "five");
        const afterwards = await scrape();
        for (const [model, usage] of [["maple", maple], ["qwen3-tiny", qwen]] as const) {
            const labels = { model };
            const delta = (family: string): number => afterwards.value(family, labels) - before.value(family, labels);
            assert.equal(delta("maple:generation_tokens_total"), usage.completion_tokens, `${model}'s generated tokens`);
            assert.equal(delta("maple:prompt_tokens_total"), usage.prompt_tokens, `${model}'s prompt tokens`);
            for (const histogram of ["maple:time_to_first_token_seconds", "maple:e2e_request_latency_seconds", "maple:request_queue_time_seconds"]) {
                assert.equal(afterwards.histogram(histogram, labels).count - (before.samples.has(`${histogram}_count{model="${model}"}`) ? before.histogram(histogram, labels).count : 0),
                    1, `one ${histogram} of ${model}`);
            }
            assert.equal(afterwards.value("maple:num_requests_running", labels), 0);
            assert.equal(afterwards.value("maple:request_rejections_total", { reason: "queue_full", model }), 0);
            assert.ok(afterwards.value("maple:prompt_cache_saves_total", { tier: "ram", model }) >= 0, `${model} has its own prompt-cache series`);
        }
        assert.notEqual(maple.completion_tokens, qwen.completion_tokens, "the two counts tell the models apart");
        assert.equal(afterwards.value("maple:generation_tokens_total", { model: "embed" }), before.value("maple:generation_tokens_total", { model: "embed" }));
        assert.equal(afterwards.value("maple:kv_cache_usage_perc", { model: "embed" }), 0);
    });

    it("computes embeddings through the openai SDK: the model's width, the same vector for the same input, one call equal to several", async () => {
        const [embed] = (await listModels(server)).filter((model) => model.id === "embed");
        assert.equal(embed!.dimensions, 256, "qwen3-embedding-tiny's embedding_length");
        // The SDK asks for base64 unless told otherwise, and decodes it.
        const batch = await server.client.embeddings.create({ model: "embed", input: ["the first text", "a second, longer text to embed", "3"] });
        assert.equal(batch.model, "embed");
        assert.deepEqual(batch.data.map((item) => item.index), [0, 1, 2]);
        for (const item of batch.data) {
            assert.equal(item.embedding.length, 256);
            assert.ok(Math.abs(dot(item.embedding, item.embedding) - 1) < 1e-4, "normalised");
        }
        assert.ok(batch.usage.prompt_tokens >= 3 && batch.usage.total_tokens === batch.usage.prompt_tokens);
        const single = await server.client.embeddings.create({ model: "embed", input: "the first text" });
        const second = await server.client.embeddings.create({ model: "embed", input: ["a second, longer text to embed"] });
        assert.deepEqual(single.data[0]!.embedding, batch.data[0]!.embedding);
        assert.deepEqual(second.data[0]!.embedding, batch.data[1]!.embedding);
        assert.notDeepEqual(batch.data[0]!.embedding, batch.data[1]!.embedding);
        assert.equal(single.usage.prompt_tokens + second.usage.prompt_tokens + (batch.usage.prompt_tokens - single.usage.prompt_tokens - second.usage.prompt_tokens),
            batch.usage.prompt_tokens);

        const floats = await server.client.embeddings.create({ model: "embed", input: "the first text", encoding_format: "float" });
        assert.deepEqual(floats.data[0]!.embedding.map(Math.fround), single.data[0]!.embedding, "float and base64 carry the same vector");
        const tokens = await server.post("/v1/embeddings", { model: "embed", input: [[1, 2, 3], [4, 5]], encoding_format: "float" });
        assert.equal(tokens.status, 200);
        const tokenBody = await tokens.json() as { data: { embedding: number[] }[]; usage: { prompt_tokens: number } };
        assert.equal(tokenBody.data.length, 2);
        assert.ok(tokenBody.usage.prompt_tokens >= 5);
    });

    it("refuses dimensions other than the model's, and empty input", async () => {
        const resized = await server.post("/v1/embeddings", { model: "embed", input: "x", dimensions: 64 });
        assert.equal(resized.status, 400);
        assert.match((await resized.json() as WireError).error.message, /256/);
        const same = await server.post("/v1/embeddings", { model: "embed", input: "x", dimensions: 256 });
        assert.equal(same.status, 200);
        const empty = await server.post("/v1/embeddings", { model: "embed", input: [] });
        assert.equal(empty.status, 400);
    });

    it("answers ollama.embed the same vectors", async () => {
        const ollama = new Ollama({ host: server.url });
        const both = await ollama.embed({ model: "embed", input: ["the first text", "a second, longer text to embed"] });
        const openai = await server.client.embeddings.create({ model: "embed", input: ["the first text", "a second, longer text to embed"], encoding_format: "float" });
        assert.equal(both.embeddings.length, 2);
        assert.deepEqual(both.embeddings, openai.data.map((item) => item.embedding));
        assert.ok(both.prompt_eval_count > 0);
        const one = await ollama.embed({ model: "embed", input: "the first text" });
        assert.deepEqual(one.embeddings[0], both.embeddings[0]);
        const legacy = await ollama.embeddings({ model: "embed", prompt: "the first text" });
        assert.deepEqual(legacy.embedding, both.embeddings[0]);
    });

    it("tells a chat model asked for embeddings, and an embedding model asked to chat, what to do instead", async () => {
        await assert.rejects(server.client.embeddings.create({ model: "qwen3-tiny", input: "x" }), (error: unknown) => {
            assert.ok(error instanceof BadRequestError);
            assert.match(error.message, /'qwen3-tiny' is a chat model/);
            assert.match(error.message, /'embed'/, "names the embedding model served");
            return true;
        });
        const ollama = new Ollama({ host: server.url });
        await assert.rejects(ollama.embed({ model: "maple", input: "x" }), (error: Error & { status_code?: number }) => error.status_code === 400 && /chat model/.test(error.message));
        const chat = await server.post("/v1/chat/completions", { model: "embed", messages: [{ role: "user", content: "hi" }] });
        assert.equal(chat.status, 400);
        assert.match((await chat.json() as WireError).error.message, /'embed' is an embedding model/);
    });
});

describe("a bound of one loaded chat model", { timeout: 300_000 }, () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({
            model: "maple=synthetic:maple-tiny", models: "qwen=synthetic:qwen3-tiny", parallel: 1, maxLoadedModels: 1, pinDefaultModel: false
        });
    });
    after(async () => server.close());

    const statuses = async (): Promise<Record<string, string>> => Object.fromEntries((await listModels(server)).map((model) => [model.id, model.status]));

    it("loads the one asked for, unloading the other in between, and never cuts a request in flight", async () => {
        assert.deepEqual(await statuses(), { maple: "loaded", qwen: "unloaded" });
        // A long streamed answer from maple is under way when qwen is asked for: qwen waits for it to end.
        const long = `${"word ".repeat(60)}end`;
        const stream = await server.client.completions.create({ model: "maple", prompt: "x", max_tokens: 200, stream: true, grammar: exact(long) } as never) as unknown as AsyncIterable<{ choices: { text: string }[] }>;
        const iterator = stream[Symbol.asyncIterator]();
        let streamed = (await iterator.next()).value?.choices[0]?.text ?? "";
        const qwen = complete(server, "qwen", "qwen served");
        qwen.catch(() => undefined);
        for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) streamed += next.value.choices[0]?.text ?? "";
        assert.equal(streamed, long, "the request in flight ran to its end");
        assert.equal((await qwen).choices[0]!.text, "qwen served");
        assert.deepEqual(await statuses(), { maple: "unloaded", qwen: "loaded" });

        for (const [model, other] of [["maple", "qwen"], ["qwen", "maple"], ["maple", "qwen"]] as const) {
            assert.equal((await complete(server, model, `${model} again`)).choices[0]!.text, `${model} again`);
            const now = await statuses();
            assert.equal(now[model], "loaded");
            assert.equal(now[other], "unloaded");
        }
    });

    it("takes Ollama's keep_alive: a load-only request with keep_alive 0 loads the model, then unloads it once idle", async () => {
        const ollama = new Ollama({ host: server.url });
        const loaded = await ollama.generate({ model: "qwen", prompt: "", keep_alive: 0, stream: false });
        assert.equal(loaded.done_reason, "load");
        await waitFor(async () => {
            const now = await statuses();
            return now["qwen"] === "unloaded" && now["maple"] === "unloaded" ? true : undefined;
        }, "qwen to be unloaded once idle, as keep_alive 0 asks");
        await assert.rejects(ollama.generate({ model: "qwen", prompt: "x", keep_alive: "soon", stream: false }),
            (error: Error & { status_code?: number }) => error.status_code === 400 && /keep_alive/.test(error.message));
    });
});

describe("loading on demand within the memory bound", { timeout: 300_000 }, () => {
    let server: TestServer;
    let memoryOf: Record<string, number>;
    before(async () => {
        // Each model's weights + KV as the registry computes them: a bound that holds either one, never both.
        const layout = { contextSize: 1024, slots: 1, batchSize: 512, swaFullCache: false };
        const paths = await Promise.all(["maple-tiny", "qwen3-tiny"].map((name) => ensureSyntheticModel(name, testModelsDir)));
        const [maple, qwen] = await Promise.all(paths.map((path) => readModelFileFacts(path, layout)));
        memoryOf = { maple: maple!.memoryBytes, qwen: qwen!.memoryBytes };
        const boundMiB = Math.ceil(Math.max(maple!.memoryBytes, qwen!.memoryBytes) / (1 << 20)) + 1;
        assert.ok(boundMiB * (1 << 20) < maple!.memoryBytes + qwen!.memoryBytes, "the bound holds one model, not two");
        server = await startTestServer({
            model: "maple=synthetic:maple-tiny", models: "listed=synthetic:qwen3-tiny", parallel: 1, loadOnDemand: true, maxModelMemoryMiB: boundMiB, pinDefaultModel: false
        });
        await server.models.whenStarted();
    });
    after(async () => server.close());

    const statuses = async (): Promise<Record<string, string>> => Object.fromEntries((await listModels(server)).map((model) => [model.id, model.status]));

    it("loads a model of the models directory when a request names it, unloading the idle one it would not fit beside", async () => {
        assert.deepEqual(await statuses(), { maple: "loaded", listed: "unloaded" }, "the listed models only; the second does not fit beside the first at start");
        // qwen3-tiny is the file `listed` serves: that model, under the name the request gave, never a second copy of the file.
        const qwen = await complete(server, "qwen3-tiny", "loaded on demand");
        assert.equal(qwen.choices[0]!.text, "loaded on demand");
        assert.equal(qwen.model, "qwen3-tiny");
        const health = await (await server.request("/health")).json() as { models: { id: string; memory_bytes: number }[] };
        assert.deepEqual(health.models.map((model) => model.id), ["maple", "listed"]);
        assert.deepEqual(await statuses(), { maple: "unloaded", listed: "loaded" }, "maple had to go for qwen3-tiny to fit");
        assert.equal(health.models.find((model) => model.id === "listed")!.memory_bytes, memoryOf["qwen"]);
        const bySpec = await complete(server, "synthetic:qwen3-tiny", "the same file");
        assert.equal(bySpec.choices[0]!.text, "the same file");
        assert.equal(bySpec.model, "synthetic:qwen3-tiny");
        assert.equal(bySpec.system_fingerprint, qwen.system_fingerprint, "served from the same file");
        const again = await complete(server, "maple-tiny", "maple reloaded");
        assert.equal(again.choices[0]!.text, "maple reloaded");
        assert.deepEqual(await statuses(), { maple: "loaded", listed: "unloaded" }, "maple-tiny is the file maple serves");
        assert.equal((await listModels(server)).length, 2);
        const metrics = await (await server.request("/metrics")).text();
        assert.match(metrics, /maple:model_requests_total\{model="listed"\} 2/);
        assert.match(metrics, /maple:model_requests_total\{model="maple"\} 1/);
    });

    it("answers a name the models directory does not hold with the default", async () => {
        const other = await complete(server, "no-such-model", "the default");
        assert.equal(other.choices[0]!.text, "the default");
        assert.ok(!(await listModels(server)).some((model) => model.id === "no-such-model"));
    });
});

describe("the keep-alive", { timeout: 300_000 }, () => {
    let server: TestServer;
    before(async () => {
        server = await startTestServer({ model: "maple=synthetic:maple-tiny", parallel: 1, pinDefaultModel: false, keepAliveSeconds: 0 });
    });
    after(async () => server.close());

    const status = async (): Promise<string | undefined> => (await listModels(server))[0]?.status;

    it("unloads an idle model once its keep-alive is over, and a request loads it again", async () => {
        await waitFor(async () => ((await status()) === "unloaded" ? true : undefined), "the idle model to be unloaded");
        assert.equal((await complete(server, "maple", "back again")).choices[0]!.text, "back again");
        await waitFor(async () => ((await status()) === "unloaded" ? true : undefined), "the model to be unloaded again once idle");
        const health = await server.request("/health");
        assert.equal(health.status, 200, "an unloaded default model is not a failed one");
    });
});

describe("a model that fails to load", { timeout: 300_000 }, () => {
    let server: TestServer;
    const log: string[] = [];
    before(async () => {
        const logStream = new Writable({
            write(chunk: Buffer, _encoding, done) {
                log.push(chunk.toString());
                done();
            }
        });
        server = await startTestServer({ model: "maple=synthetic:maple-tiny", models: "broken=/nonexistent/broken.gguf", parallel: 1, logLevel: "error" }, { logStream });
        await server.models.whenStarted();
    });
    after(async () => server.close());

    it("answers 500 model_load_failed with Retry-After at once while it backs off, and does not try again meanwhile", async () => {
        const loadFailures = (): number => log.filter((line) => line.includes("/nonexistent/broken.gguf")).length;
        assert.equal(loadFailures(), 1, "its load at start failed, and said why in the log");
        for (let attempt = 0; attempt < 2; attempt += 1) {
            const response = await server.post("/v1/completions", { model: "broken", prompt: "x", max_tokens: 1 });
            assert.equal(response.status, 500);
            const retryAfter = Number(response.headers.get("retry-after"));
            assert.ok(retryAfter >= 1 && retryAfter <= 5, `Retry-After ${retryAfter}: the rest of the first back-off (5 s)`);
            const body = await response.json() as WireError;
            assert.equal(body.error.code, "model_load_failed");
            assert.match(body.error.message, /'broken' failed to load/);
        }
        assert.equal(loadFailures(), 1, "no new load within the back-off");
        assert.equal((await listModels(server)).find((model) => model.id === "broken")?.status, "failed");
        assert.equal((await complete(server, "maple", "still serving")).choices[0]!.text, "still serving");
    });
});

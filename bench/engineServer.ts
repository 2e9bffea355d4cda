/**
 * Maple's engine for bench/speed, in one long-lived process with the server's slots: the same
 * generation path as the routes (slot, engine, UTF-8 decoding, stop strings), driven two ways.
 *
 * - `POST /engine-run {"run": N}`: one run timed in-process, with no HTTP per token (Maple's
 *   engine figure). Answers `{ttftMs, decodeTokensPerSecond}`.
 * - `POST /v1/completions` with `stream: true` on `port`: the bare Node HTTP floor. Each piece is written
 *   as a minimal SSE event with node:http's own `res.write`, and nothing else runs per token: no
 *   Fastify, no validation, no chunk objects, no metrics. Timed by the same client as the servers,
 *   it measures what any Node server pays per token on this machine (the socket write, the
 *   kernel's loopback delivery, the client's wake-up). Maple's own layers cost what Maple's HTTP
 *   figure adds to this one.
 * - Maple's own HTTP app (Fastify, routes, validation, metrics: what `maple serve` runs) on
 *   `maplePort`, over the same engine and slots. Timing it against the other two in this one
 *   process measures what Maple's layers cost per token with nothing else different: separate
 *   processes of the same code decode up to ~0.8 ms/token apart on this machine, run to run, which
 *   is more than the cost measured.
 *
 * Usage: node dist/bench/engineServer.js MODEL_PATH THREADS SLOTS CONTEXT_SIZE PROMPT_TOKENS MAX_TOKENS
 * Prints `{"port": N, "maplePort": M}` once both listen on 127.0.0.1.
 */
import { createServer, type IncomingMessage } from "node:http";
import { once } from "node:events";
import { defaultConfig } from "../src/config/settings.js";
import { loadLlamaEngine } from "../src/engine/loadLlamaEngine.js";
import { startTextGeneration, type TextGeneration } from "../src/core/generateText.js";
import { buildApp } from "../src/http/app.js";
import { createLogger } from "../src/server/logger.js";
import { ModelRegistry } from "../src/core/modelRegistry.js";
import { readyModel, version } from "../src/server/startServer.js";
import { systemFingerprint } from "../src/server/systemFingerprint.js";
import { runPrompt } from "./shared.js";

const [modelPath, threadsText = "2", slotsText = "4", contextSizeText = "4096", promptTokensText = "200", maxTokensText = "128"] = process.argv.slice(2);
if (modelPath === undefined) throw new Error("usage: engineServer MODEL_PATH THREADS SLOTS CONTEXT_SIZE PROMPT_TOKENS MAX_TOKENS");
const slots = Number(slotsText);
const engine = await loadLlamaEngine({ modelPath, threads: Number(threadsText), contextSize: Number(contextSizeText), slots, batchSize: 512 });
// Maple's app as startServer builds it, over this process's engine; its scheduler serves the bench's own runs too.
const config = defaultConfig({ model: modelPath });
const ready = readyModel(engine, config, modelPath, await systemFingerprint(version, modelPath, engine));
const { scheduler } = ready;
const models = ModelRegistry.ofLoaded(config.modelId, ready);
const mapleApp = buildApp({ config, host: models.default.chat, models, logger: createLogger("warn", process.stderr), version, shutdownSignal: new AbortController().signal });
const mapleUrl = await mapleApp.listen({ host: "127.0.0.1", port: 0 });

interface CompletionBody {
    prompt: string;
    max_tokens?: number;
    seed?: number;
    temperature?: number;
    top_p?: number;
    top_k?: number;
}

/** The bench's sampling (ignore_eos, as the servers are asked): the same tokens count as Maple's. */
function generate(prompt: string, maxTokens: number, body: Omit<CompletionBody, "prompt">): Promise<TextGeneration> {
    return startTextGeneration(engine, scheduler, {
        promptTokens: engine.tokenize(prompt, { specialTokens: true, addBos: true }),
        maxTokens,
        stop: [],
        signal: new AbortController().signal,
        sampling: { temperature: body.temperature ?? 0.6, topK: body.top_k ?? 20, topP: body.top_p ?? 0.95, seed: body.seed, ignoreEos: true }
    });
}

async function engineRun(run: number): Promise<{ ttftMs: number; decodeTokensPerSecond: number }> {
    const startedAt = performance.now();
    const generation = await generate(runPrompt(run, Number(promptTokensText)), Number(maxTokensText), { seed: run + 1 });
    let firstAt = 0;
    let lastAt = 0;
    let generated = 0;
    for await (const piece of generation.pieces) {
        // The last piece may only flush held text: it is not a token.
        if (piece.token === undefined) continue;
        lastAt = performance.now();
        if (generated === 0) firstAt = lastAt;
        generated += 1;
    }
    generation.close();
    return { ttftMs: firstAt - startedAt, decodeTokensPerSecond: (generated - 1) / ((lastAt - firstAt) / 1000) };
}

async function readJson<T>(request: IncomingMessage): Promise<T> {
    const parts: Buffer[] = [];
    for await (const part of request) parts.push(part as Buffer);
    return JSON.parse(Buffer.concat(parts).toString()) as T;
}

const server = createServer((request, response) => {
    void (async () => {
        if (request.url === "/health") return response.end("{}");
        if (request.url === "/engine-run") {
            const { run } = await readJson<{ run: number }>(request);
            return response.end(JSON.stringify(await engineRun(run)));
        }
        const body = await readJson<CompletionBody>(request);
        const generation = await generate(body.prompt, body.max_tokens ?? 16, body);
        response.writeHead(200, { "content-type": "text/event-stream" });
        // Chunks of OpenAI's size and shape, so the client receives as many bytes as from the servers.
        const id = `cmpl-${Date.now().toString(16)}`;
        const created = Math.floor(Date.now() / 1000);
        // Stepped by hand rather than with for await, which drops the generator's return value: the summary.
        let next = await generation.pieces.next();
        for (; !next.done; next = await generation.pieces.next()) {
            if (next.value.text === "") continue;
            const chunk = { id, object: "text_completion", created, model: "bench", choices: [{ index: 0, text: next.value.text, logprobs: null, finish_reason: null }] };
            response.write(`data: ${JSON.stringify(chunk)}\n\n`);
        }
        generation.close();
        // The client counts tokens from usage, as it does with the servers.
        const usage = { completion_tokens: next.value.completionTokens };
        response.end(`data: ${JSON.stringify({ id, object: "text_completion", created, model: "bench", choices: [], usage })}\n\ndata: [DONE]\n\n`);
    })().catch((error: unknown) => {
        response.statusCode = 500;
        response.end(String(error));
    });
});
server.listen(0, "127.0.0.1");
await once(server, "listening");
const address = server.address();
console.log(JSON.stringify({ port: typeof address === "object" && address !== null ? address.port : 0, maplePort: Number(new URL(mapleUrl).port) }));
process.once("SIGTERM", () => {
    server.close();
    void mapleApp.close().then(() => engine.dispose()).then(() => process.exit(0));
});

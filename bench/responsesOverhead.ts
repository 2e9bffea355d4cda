import { request } from "node:http";
import { parseArgs } from "node:util";
import type { GenerationPart } from "../src/core/index.js";
import { defaultConfig } from "../src/config/settings.js";
import { ChatChunkWriter } from "../src/openai/chatResponse.js";
import { ResponseEventWriter } from "../src/responses/responseEvents.js";
import { createLogger } from "../src/server/logger.js";
import { startServer } from "../src/server/startServer.js";
import { median, percentile, runPrompt } from "./shared.js";

/**
 * The per-token cost of the Responses stream over the chat stream: one Maple server, the same
 * prompt, seed and length on both routes, in rounds; each round runs both streams back to back
 * (in reversed order every other round) on a fresh prompt, and the figure is the median of the
 * rounds' paired differences in ms per generated token, with its interquartile range. The
 * client stamps chunks on arrival and parses them afterwards (see streamClient.ts: its CPU is
 * taken from the decode it measures on two cores).
 *
 * By default the model reasons throughout (`ignore_eos`, random weights never close the think
 * block): the Responses stream then sends two events per token (reasoning text and its summary),
 * chat one chunk. `--no-thinking` measures answer text instead (one event per token on each).
 *
 * Over HTTP, on a shared two-core machine, that difference drowns in run-to-run swings of many
 * milliseconds. So the script first measures what the Responses format adds in Maple's own
 * process: the CPU time of turning one token's part into its wire bytes (events built and
 * serialised), chat's chunk writer against the Responses event writer, in interleaved rounds.
 *
 *   node dist/bench/responsesOverhead.js --model synthetic:qwen3-0.6b --rounds 20 --tokens 128
 */

const { values } = parseArgs({
    options: {
        model: { type: "string", default: "synthetic:qwen3-0.6b" },
        rounds: { type: "string", default: "20" },
        tokens: { type: "string", default: "128" },
        "prompt-tokens": { type: "string", default: "200" },
        threads: { type: "string" },
        "no-thinking": { type: "boolean", default: false },
        "writers-only": { type: "boolean", default: false }
    }
});
const rounds = Number(values.rounds);
const maxTokens = Number(values.tokens);
const promptTokens = Number(values["prompt-tokens"]);
const thinking = values["no-thinking"] !== true;

interface Timing {
    /** ms per token from the first text-bearing event to the last. */
    msPerToken: number;
    tokens: number;
    bytesPerToken: number;
}

/** POSTs a streaming request and stamps every chunk on arrival; parsing waits for the end. */
function streamArrivals(url: string, body: Record<string, unknown>): Promise<{ at: number; data: Buffer }[]> {
    const payload = JSON.stringify(body);
    return new Promise((resolve, reject) => {
        const outgoing = request(url, { method: "POST", agent: false, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) } }, (response) => {
            const received: { at: number; data: Buffer }[] = [];
            response.on("data", (data: Buffer) => received.push({ at: performance.now(), data }));
            response.on("end", () => (response.statusCode === 200 ? resolve(received) : reject(new Error(`${url}: HTTP ${response.statusCode} ${Buffer.concat(received.map((arrival) => arrival.data)).toString()}`))));
            response.on("error", reject);
        });
        outgoing.on("error", reject);
        outgoing.end(payload);
    });
}

/** Reads `data:` payloads with the arrival time of the chunk that completed each. */
function events(arrivals: { at: number; data: Buffer }[]): { at: number; data: Record<string, unknown> }[] {
    const decoder = new TextDecoder();
    const parsed: { at: number; data: Record<string, unknown> }[] = [];
    let buffered = "";
    for (const { at, data } of arrivals) {
        buffered += decoder.decode(data, { stream: true });
        const blocks = buffered.split("\n\n");
        buffered = blocks.pop() ?? "";
        for (const block of blocks) {
            const line = block.split("\n").find((candidate) => candidate.startsWith("data: {"));
            if (line !== undefined) parsed.push({ at, data: JSON.parse(line.slice(6)) as Record<string, unknown> });
        }
    }
    return parsed;
}

function timing(textAt: number[], tokens: number, bytes: number): Timing {
    const first = textAt[0] ?? NaN;
    const last = textAt.at(-1) ?? first;
    return { msPerToken: (last - first) / (tokens - 1), tokens, bytesPerToken: bytes / tokens };
}

async function chatRun(url: string, body: Record<string, unknown>): Promise<Timing> {
    const arrivals = await streamArrivals(`${url}/v1/chat/completions`, {
        ...body, max_tokens: maxTokens, stream: true, stream_options: { include_usage: true }
    });
    const parsed = events(arrivals);
    const textAt = parsed.filter(({ data }) => {
        const delta = (data["choices"] as { delta?: Record<string, unknown> }[] | undefined)?.[0]?.delta;
        return (typeof delta?.["content"] === "string" && delta["content"] !== "") || typeof delta?.["reasoning_content"] === "string";
    }).map(({ at }) => at);
    const usage = parsed.at(-1)!.data["usage"] as { completion_tokens: number };
    return timing(textAt, usage.completion_tokens, arrivals.reduce((sum, arrival) => sum + arrival.data.length, 0));
}

async function responsesRun(url: string, body: Record<string, unknown>): Promise<Timing> {
    const { messages, ...rest } = body as { messages: unknown };
    const arrivals = await streamArrivals(`${url}/v1/responses`, { ...rest, input: messages, max_output_tokens: maxTokens, stream: true, store: false });
    const parsed = events(arrivals);
    const textAt = parsed.filter(({ data }) => data["type"] === "response.reasoning_text.delta" || data["type"] === "response.output_text.delta").map(({ at }) => at);
    const final = parsed.at(-1)!.data["response"] as { usage: { output_tokens: number } };
    return timing(textAt, final.usage.output_tokens, arrivals.reduce((sum, arrival) => sum + arrival.data.length, 0));
}

/** CPU µs per token to build and serialise one token's events, for `parts` tokens of reasoning (or answer) text. */
function writerCost(format: "chat" | "responses", parts: number): number {
    const part: Extract<GenerationPart, { type: "reasoning-delta" | "text-delta" }> = { type: thinking ? "reasoning-delta" : "text-delta", text: " token" };
    let bytes = 0;
    const started = process.cpuUsage();
    if (format === "chat") {
        const writer = new ChatChunkWriter({ id: "chatcmpl-1", created: 1, model: "bench", weightVersion: "default", includeReasoning: true, systemFingerprint: "fp_bench", includeUsage: false });
        bytes += JSON.stringify(writer.first()).length;
        for (let index = 0; index < parts; index++) {
            for (const chunk of writer.part(part)) bytes += `data: ${JSON.stringify(chunk)}\n\n`.length;
        }
    } else {
        const writer = new ResponseEventWriter({ id: "resp_1", createdAt: 1, model: "bench", echo: {} }, { tools: [], encryptedReasoning: false });
        for (const event of writer.start()) bytes += event.type.length;
        for (let index = 0; index < parts; index++) {
            for (const event of writer.part(part)) bytes += `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`.length;
        }
    }
    const used = process.cpuUsage(started);
    if (bytes === 0) throw new Error("nothing written");
    return (used.user + used.system) / parts;
}

const writerRounds: { chat: number; responses: number }[] = [];
for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? ["chat", "responses"] as const : ["responses", "chat"] as const;
    const costs: Partial<Record<"chat" | "responses", number>> = {};
    for (const format of order) costs[format] = writerCost(format, 20_000);
    writerRounds.push({ chat: costs.chat!, responses: costs.responses! });
}
const writers = {
    chatMicrosPerToken: median(writerRounds.map((round) => round.chat)),
    responsesMicrosPerToken: median(writerRounds.map((round) => round.responses)),
    differenceMicrosPerToken: {
        median: median(writerRounds.map((round) => round.responses - round.chat)),
        p25: percentile(writerRounds.map((round) => round.responses - round.chat), 0.25),
        p75: percentile(writerRounds.map((round) => round.responses - round.chat), 0.75)
    }
};
process.stderr.write(`writers: ${JSON.stringify(writers)}\n`);
if (values["writers-only"] === true) {
    console.log(JSON.stringify({ rounds, thinking, writers }));
    process.exit(0);
}

const config = defaultConfig({
    model: values.model, port: 0, logLevel: "warn", parallel: 1,
    ...(values.threads !== undefined ? { threads: Number(values.threads) } : {})
});
const server = await startServer(config, { logger: createLogger("warn") });
await server.ready;
try {
    const base = {
        model: "bench", temperature: 0.8, seed: 7, ignore_eos: true,
        ...(thinking ? {} : { chat_template_kwargs: { enable_thinking: false } })
    };
    // One warm-up of each, not counted.
    await chatRun(server.url, { ...base, messages: [{ role: "user", content: runPrompt(-1, promptTokens) }] });
    await responsesRun(server.url, { ...base, messages: [{ role: "user", content: runPrompt(-2, promptTokens) }] });
    const differences: number[] = [];
    const chat: Timing[] = [];
    const responses: Timing[] = [];
    for (let round = 0; round < rounds; round++) {
        const body = { ...base, messages: [{ role: "user", content: runPrompt(round, promptTokens) }] };
        const order = round % 2 === 0 ? ["chat", "responses"] as const : ["responses", "chat"] as const;
        const results: Partial<Record<"chat" | "responses", Timing>> = {};
        for (const route of order) results[route] = route === "chat" ? await chatRun(server.url, body) : await responsesRun(server.url, body);
        chat.push(results.chat!);
        responses.push(results.responses!);
        if (results.chat!.tokens !== results.responses!.tokens) throw new Error(`round ${round}: ${results.chat!.tokens} vs ${results.responses!.tokens} tokens`);
        differences.push(results.responses!.msPerToken - results.chat!.msPerToken);
        process.stderr.write(`round ${round}: chat ${results.chat!.msPerToken.toFixed(2)} ms/token, responses ${results.responses!.msPerToken.toFixed(2)} ms/token\n`);
    }
    const summary = {
        model: values.model, rounds, tokens: maxTokens, thinking, writers,
        chatMsPerToken: median(chat.map((run) => run.msPerToken)),
        responsesMsPerToken: median(responses.map((run) => run.msPerToken)),
        overheadMsPerToken: { median: median(differences), p25: percentile(differences, 0.25), p75: percentile(differences, 0.75) },
        bytesPerToken: { chat: median(chat.map((run) => run.bytesPerToken)), responses: median(responses.map((run) => run.bytesPerToken)) }
    };
    console.log(JSON.stringify(summary));
} finally {
    await server.close();
}

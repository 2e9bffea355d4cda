import { request } from "node:http";
import { benchPrompt } from "./shared.js";

/**
 * One streamed /v1/completions request against any OpenAI-compatible server (Maple or
 * llama-server), timed per chunk.
 *
 * The client shares the 2 cores with the server's spinning llama.cpp threads, so whatever CPU it
 * spends per chunk is taken from the decode it measures. Measured on maple-preview: a fetch()
 * client that parsed each chunk as it came cost ~0.5 ms of CPU per token and made either server
 * look ~2.5 ms/token slower than curl did. So chunks are only stamped with their arrival time on
 * the way in (node:http, no WHATWG streams) and parsed after the response has ended.
 *
 * Rates count tokens, not chunks: a token that ends inside a UTF-8 character has no text of its
 * own, and both servers send it with the next token, in one chunk. Random weights produce such
 * tokens often (maple-preview: 1 to 12 in 128), so counting chunks made every HTTP stream look up
 * to 3 ms/token slower than the engine that generated the same tokens. The token count is the
 * stream's own `usage.completion_tokens`.
 */
export interface StreamTiming {
    ttftMs: number;
    /** Gaps between successive text chunks (a chunk that carries two tokens shows as a double gap). */
    interTokenMs: number[];
    /** Tokens after the first text chunk, per second from it to the last text chunk. */
    decodeTokensPerSecond: number;
    cachedTokens: number | undefined;
    /** `usage.completion_tokens` (text chunks if the server sent no usage). */
    completionTokens: number;
    /** Arrival time (performance.now()) of every chunk with text. */
    textArrivals: number[];
}

interface Arrival {
    at: number;
    data: Buffer;
}

export async function timeCompletionStream(url: string, body: Record<string, unknown>, onFirstData?: () => void): Promise<StreamTiming> {
    const payload = JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } });
    const startedAt = performance.now();
    const arrivals = await new Promise<Arrival[]>((resolve, reject) => {
        const outgoing = request(`${url}/v1/completions`, {
            method: "POST",
            // A fresh connection per request: a kept-alive socket the server has since closed would fail the run.
            agent: false,
            headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }
        }, (response) => {
            const received: Arrival[] = [];
            response.on("data", (data: Buffer) => {
                if (received.length === 0) onFirstData?.();
                received.push({ at: performance.now(), data });
            });
            response.on("end", () => {
                if (response.statusCode === 200) resolve(received);
                else reject(new Error(`${url}: HTTP ${response.statusCode} ${Buffer.concat(received.map((arrival) => arrival.data)).toString()}`));
            });
            response.on("error", reject);
        });
        outgoing.on("error", reject);
        outgoing.end(payload);
    });
    return parseArrivals(arrivals, startedAt);
}

function parseArrivals(arrivals: readonly Arrival[], startedAt: number): StreamTiming {
    const decoder = new TextDecoder();
    const textArrivals: number[] = [];
    let cachedTokens: number | undefined;
    let completionTokens: number | undefined;
    let buffered = "";
    for (const { at, data } of arrivals) {
        buffered += decoder.decode(data, { stream: true });
        const events = buffered.split("\n\n");
        buffered = events.pop() ?? "";
        for (const event of events) {
            if (!event.startsWith("data: {")) continue;
            const chunk = JSON.parse(event.slice(6)) as {
                choices?: { text?: string }[];
                usage?: { completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } };
                timings?: { cache_n?: number };
            };
            if (chunk.usage?.prompt_tokens_details?.cached_tokens !== undefined) cachedTokens = chunk.usage.prompt_tokens_details.cached_tokens;
            if (chunk.timings?.cache_n !== undefined) cachedTokens = chunk.timings.cache_n;
            if (chunk.usage?.completion_tokens !== undefined) completionTokens = chunk.usage.completion_tokens;
            if (chunk.choices?.[0]?.text) textArrivals.push(at);
        }
    }
    const first = textArrivals[0] ?? NaN;
    const last = textArrivals.at(-1) ?? first;
    const tokens = completionTokens ?? textArrivals.length;
    return {
        ttftMs: first - startedAt,
        interTokenMs: textArrivals.slice(1).map((at, index) => at - textArrivals[index]!),
        // The first text chunk is taken to carry one token: it holds more only when the very first token ends inside a character.
        decodeTokensPerSecond: (tokens - 1) / ((last - first) / 1000),
        cachedTokens,
        completionTokens: tokens,
        textArrivals
    };
}

/**
 * Decode-phase aggregate of `streams` streams at once on distinct prompts: tokens that arrived
 * while every stream was decoding, over that window. A stream's chunks in the window count as its
 * tokens per chunk (`usage` over text chunks) each.
 */
export async function parallelAggregate(url: string, streams: number, sampling: Record<string, unknown>): Promise<number> {
    const timings = await Promise.all(Array.from({ length: streams }, (_, index) =>
        timeCompletionStream(url, { prompt: `Stream ${index}: ${benchPrompt(32)}`, ...sampling, seed: index + 1 })));
    const start = Math.max(...timings.map((timing) => timing.textArrivals[0] ?? Infinity));
    const end = Math.min(...timings.map((timing) => timing.textArrivals.at(-1) ?? 0));
    const inWindow = timings.reduce((sum, timing) => {
        const tokensPerChunk = timing.completionTokens / timing.textArrivals.length;
        return sum + timing.textArrivals.filter((at) => at > start && at <= end).length * tokensPerChunk;
    }, 0);
    return inWindow / ((end - start) / 1000);
}

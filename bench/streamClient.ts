/** One streamed /v1/completions request against any OpenAI-compatible server (Maple or llama-server), timed per chunk. */
export interface StreamTiming {
    ttftMs: number;
    /** Gaps between successive text chunks. */
    interTokenMs: number[];
    chunks: number;
    decodeTokensPerSecond: number;
    cachedTokens: number | undefined;
}

export async function timeCompletionStream(url: string, body: Record<string, unknown>): Promise<StreamTiming> {
    const startedAt = performance.now();
    const response = await fetch(`${url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } })
    });
    if (!response.ok || response.body === null) throw new Error(`${url}: HTTP ${response.status} ${await response.text()}`);
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    const arrivals: number[] = [];
    let cachedTokens: number | undefined;
    let buffered = "";
    for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const now = performance.now();
        buffered += decoder.decode(value, { stream: true });
        const events = buffered.split("\n\n");
        buffered = events.pop() ?? "";
        for (const event of events) {
            if (!event.startsWith("data: {")) continue;
            const chunk = JSON.parse(event.slice(6)) as {
                choices?: { text?: string }[];
                usage?: { prompt_tokens_details?: { cached_tokens?: number } };
                timings?: { cache_n?: number };
            };
            if (chunk.usage?.prompt_tokens_details?.cached_tokens !== undefined) cachedTokens = chunk.usage.prompt_tokens_details.cached_tokens;
            if (chunk.timings?.cache_n !== undefined) cachedTokens = chunk.timings.cache_n;
            if (chunk.choices?.[0]?.text) arrivals.push(now);
        }
    }
    const first = arrivals[0] ?? performance.now();
    const last = arrivals.at(-1) ?? first;
    return {
        ttftMs: first - startedAt,
        interTokenMs: arrivals.slice(1).map((at, index) => at - arrivals[index]!),
        chunks: arrivals.length,
        decodeTokensPerSecond: (arrivals.length - 1) / ((last - first) / 1000),
        cachedTokens
    };
}

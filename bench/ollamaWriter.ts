import { parseArgs } from "node:util";
import type { GenerationPart } from "../src/core/index.js";
import { ChatChunkWriter } from "../src/openai/chatResponse.js";
import { OllamaChunkWriter } from "../src/ollama/responseChunks.js";
import { median, percentile } from "./shared.js";

/**
 * The per-token cost of Ollama's NDJSON writer against the chat SSE writer, in Maple's own
 * process: the CPU time of turning one token's part into its wire bytes (objects built and
 * serialised as they go on the socket: `data: {…}\n\n` for chat, `{…}\n` for Ollama), in
 * interleaved rounds, the median of the rounds. Over HTTP the difference drowns in the decode's
 * run-to-run swings (see responsesOverhead.ts), so only the writers are timed.
 *
 *   node dist/bench/ollamaWriter.js --rounds 20 [--no-thinking]
 */

const { values } = parseArgs({
    options: {
        rounds: { type: "string", default: "20" },
        parts: { type: "string", default: "20000" },
        "no-thinking": { type: "boolean", default: false }
    }
});
const rounds = Number(values.rounds);
const parts = Number(values.parts);
const part: GenerationPart = { type: values["no-thinking"] === true ? "text-delta" : "reasoning-delta", text: " token" };

type Format = "chatSse" | "ollamaNdjson";

/** µs of CPU per part, and bytes per part. */
function writerCost(format: Format): { micros: number; bytes: number } {
    let bytes = 0;
    const started = process.cpuUsage();
    if (format === "chatSse") {
        const writer = new ChatChunkWriter({ id: "chatcmpl-1", created: 1, model: "bench", weightVersion: "default", includeReasoning: true, systemFingerprint: "fp_bench", includeUsage: false });
        bytes += JSON.stringify(writer.first()).length;
        for (let index = 0; index < parts; index++) {
            for (const chunk of writer.part(part)) bytes += `data: ${JSON.stringify(chunk)}\n\n`.length;
        }
    } else {
        const clock = { durations: () => ({ total_duration: 0, load_duration: 0, prompt_eval_duration: 0, eval_duration: 0 }) };
        const writer = new OllamaChunkWriter({ model: "bench", api: "chat" }, clock);
        for (let index = 0; index < parts; index++) {
            for (const chunk of writer.part(part)) bytes += `${JSON.stringify(chunk)}\n`.length;
        }
    }
    const used = process.cpuUsage(started);
    if (bytes === 0) throw new Error("nothing written");
    return { micros: (used.user + used.system) / parts, bytes: bytes / parts };
}

const results: Record<Format, { micros: number; bytes: number }>[] = [];
for (let round = 0; round < rounds; round++) {
    const order: Format[] = round % 2 === 0 ? ["chatSse", "ollamaNdjson"] : ["ollamaNdjson", "chatSse"];
    const costs: Partial<Record<Format, { micros: number; bytes: number }>> = {};
    for (const format of order) costs[format] = writerCost(format);
    results.push(costs as Record<Format, { micros: number; bytes: number }>);
}
const differences = results.map((round) => round.ollamaNdjson.micros - round.chatSse.micros);
console.log(JSON.stringify({
    rounds, parts, part: part.type,
    chatSseMicrosPerToken: median(results.map((round) => round.chatSse.micros)),
    ollamaNdjsonMicrosPerToken: median(results.map((round) => round.ollamaNdjson.micros)),
    differenceMicrosPerToken: { median: median(differences), p25: percentile(differences, 0.25), p75: percentile(differences, 0.75) },
    bytesPerToken: { chatSse: results[0]!.chatSse.bytes, ollamaNdjson: results[0]!.ollamaNdjson.bytes }
}));

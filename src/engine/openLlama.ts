import { getLlama, LlamaLogLevel, type Llama } from "node-llama-cpp";
import type { GpuBackend } from "./backendChoice.js";

export type LlamaLog = (level: "warn" | "error", message: string) => void;

/**
 * One Llama per process and setting: node-llama-cpp 3.22.1's addon keeps a single logger for the
 * whole process, and a second Llama's (or GgufInsights' own backend-less one) replaces the first's
 * while the first's finalizer, run later, marks "no logger" for both. From then on llama.cpp's
 * warnings went raw to stdout, past the structured log (seen with two models, or a model's file
 * facts read before its load). Upstream, the finalizer would clear only its own logger.
 */
const opened = new Map<string, Promise<Llama>>();
/** llama.cpp's log is the process's: its lines go to the latest caller's sink, the model loading now. */
let sink: LlamaLog | undefined;

/**
 * node-llama-cpp's binding of llama.cpp as Maple uses it: the build of `gpu` (false: the CPU; which
 * backend a model gets is openBackend's choice), `threads` at most; llama.cpp's warnings and
 * errors to `onLog` (the latest one given), nothing else. The same Llama for every call with the
 * same `threads` and `gpu`.
 */
export function openLlama(threads: number, onLog: LlamaLog | undefined, gpu: GpuBackend | false = false): Promise<Llama> {
    if (onLog !== undefined) sink = onLog;
    const key = `${threads}/${String(gpu)}`;
    const cached = opened.get(key);
    if (cached !== undefined) return cached;
    const llama = getLlama({
        gpu,
        build: "never",
        progressLogs: false,
        maxThreads: threads,
        logLevel: LlamaLogLevel.warn,
        logger: (level, message) => {
            const text = message.trim();
            if (text === "" || sink === undefined) return;
            if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) sink("error", text);
            else if (level === LlamaLogLevel.warn) sink("warn", text);
        }
    });
    opened.set(key, llama);
    // A failed open is not kept: the next load tries again.
    llama.catch(() => opened.delete(key));
    return llama;
}

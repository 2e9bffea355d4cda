import { getLlama, LlamaLogLevel, type Llama } from "node-llama-cpp";

/**
 * node-llama-cpp's llama.cpp binding as Maple uses it: a prebuilt GPU build when one loads, else
 * the CPU; `threads` at most; llama.cpp's warnings and errors to `onLog`, nothing else.
 */
export function openLlama(threads: number, onLog: ((level: "warn" | "error", message: string) => void) | undefined, gpu: "auto" | false = "auto"): Promise<Llama> {
    return getLlama({
        gpu,
        build: "never",
        progressLogs: false,
        maxThreads: threads,
        logLevel: LlamaLogLevel.warn,
        logger: (level, message) => {
            const text = message.trim();
            if (text === "" || onLog === undefined) return;
            if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) onLog("error", text);
            else if (level === LlamaLogLevel.warn) onLog("warn", text);
        }
    });
}

import { pino, type Logger } from "pino";
import pretty from "pino-pretty";
import type { MapleConfig } from "../config/settings.js";

/**
 * Structured JSON logs (one object per line) when stdout is not a terminal, readable colored
 * lines when it is. The API key and authorization headers are redacted wherever they appear.
 */
export function createLogger(level: MapleConfig["logLevel"], destination: NodeJS.WritableStream = process.stdout): Logger {
    const options = {
        level,
        base: undefined,
        redact: { paths: ["req.headers.authorization", "apiKey", "config.apiKey"], censor: "[redacted]" }
    };
    const isTerminal = (destination as NodeJS.WriteStream).isTTY === true;
    if (!isTerminal) return pino(options, destination);
    return pino(options, pretty({ destination, colorize: true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname" }));
}

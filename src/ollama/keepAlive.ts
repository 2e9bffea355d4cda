import { InvalidRequestError } from "../errors.js";

const unitMs: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * Ollama's `keep_alive` of a request body, in milliseconds: seconds as a number, or a Go duration
 * (`"5m"`, `"1h30m"`, `"0"`); negative keeps the model loaded for good (null). Undefined when the
 * body has none (the server's MAPLE_KEEP_ALIVE applies).
 */
export function ollamaKeepAliveMs(body: unknown): number | null | undefined {
    const value = typeof body === "object" && body !== null ? (body as { keep_alive?: unknown }).keep_alive : undefined;
    if (value === undefined || value === null) return undefined;
    if (typeof value === "number" && Number.isFinite(value)) return value < 0 ? null : value * 1000;
    if (typeof value === "string") {
        const text = value.trim();
        if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text) < 0 ? null : Number(text) * 1000;
        const match = /^(-?)((?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+)$/.exec(text);
        if (match !== null) {
            const total = [...(match[2] ?? "").matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)]
                .reduce((sum, [, amount, unit]) => sum + Number(amount) * (unitMs[unit ?? "s"] ?? 0), 0);
            return match[1] === "-" ? null : total;
        }
    }
    throw new InvalidRequestError(`keep_alive must be seconds or a duration such as "5m", got ${JSON.stringify(value)}`, "keep_alive");
}

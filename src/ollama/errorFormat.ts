import type { MapleError } from "../errors.js";
import type { ErrorFormat } from "../http/errorFormat.js";
import { httpStatus, retryHeaders } from "../http/errorStatus.js";

/** Ollama's error body (api.StatusError's JSON): one message, no type or code. */
export interface OllamaErrorBody {
    error: string;
}

/**
 * A Maple error in Ollama's shape. The shape has no `param`, so a message that does not name its
 * field gets it in front (`options.temperature: …`), as Anthropic's does.
 */
export function ollamaErrorBody(error: MapleError): OllamaErrorBody {
    const message = error.param === null || error.message.includes(error.param) ? error.message : `${error.param}: ${error.message}`;
    return { error: message };
}

/**
 * The `/api/*` routes' errors: `{"error": "…"}` with Maple's statuses (Ollama's own are the same
 * classes: 400 bad input, 404 unknown model, 500, 503 when its queue is full) and Retry-After on
 * transient ones. Inside a started NDJSON stream, one `{"error": "…"}` line, as Ollama writes it
 * (the `ollama` client throws on it).
 */
export const ollamaErrorFormat: ErrorFormat = {
    response: (error) => ({ status: httpStatus(error), headers: retryHeaders(error), body: ollamaErrorBody(error) }),
    streamEvents: (error) => [{ data: ollamaErrorBody(error) }]
};

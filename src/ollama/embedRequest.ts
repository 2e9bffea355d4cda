import { z } from "zod";
import { InvalidRequestError } from "../errors.js";
import { maxEmbeddingInputs } from "../openai/embeddingsRequest.js";
import { parseWire } from "../wire/index.js";
import { wireOptions } from "./options.js";

const embedWire = z.object({
    model: z.string({ required_error: "model is required" }).min(1, "model is required"),
    input: z.union([z.string(), z.array(z.string())]),
    // Ollama's default: an input over the context is cut to fit; false refuses it.
    truncate: z.boolean().nullish(),
    dimensions: z.number().int().positive().nullish(),
    options: wireOptions.nullish(),
    keep_alive: z.union([z.string(), z.number()]).nullish()
}).passthrough();

/** The legacy `/api/embeddings`: one `prompt`, one `embedding` back. */
const legacyWire = z.object({
    model: z.string({ required_error: "model is required" }).min(1, "model is required"),
    prompt: z.string(),
    options: wireOptions.nullish(),
    keep_alive: z.union([z.string(), z.number()]).nullish()
}).passthrough();

export interface OllamaEmbedRequest {
    model: string;
    inputs: string[];
    truncate: boolean;
    dimensions: number | undefined;
}

/** Reads `/api/embed`'s body (api.EmbedRequest). */
export function parseOllamaEmbedRequest(body: unknown): OllamaEmbedRequest {
    const wire = parseWire(embedWire, body);
    const inputs = typeof wire.input === "string" ? [wire.input] : wire.input;
    if (inputs.length === 0) throw new InvalidRequestError("input must not be empty", "input");
    if (inputs.length > maxEmbeddingInputs) throw new InvalidRequestError(`input has ${inputs.length} items; at most ${maxEmbeddingInputs} are accepted`, "input");
    return { model: wire.model, inputs, truncate: wire.truncate !== false, dimensions: wire.dimensions ?? undefined };
}

/** Reads the legacy `/api/embeddings` body (api.EmbeddingRequest): as `/api/embed` with one input, always cut to fit. */
export function parseOllamaLegacyEmbeddingRequest(body: unknown): OllamaEmbedRequest {
    const wire = parseWire(legacyWire, body);
    return { model: wire.model, inputs: [wire.prompt], truncate: true, dimensions: undefined };
}

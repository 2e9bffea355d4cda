import { z } from "zod";
import { InvalidRequestError } from "../errors.js";
import { parseWire } from "../wire/index.js";

/** OpenAI's bound on the inputs of one request. */
export const maxEmbeddingInputs = 2048;

const tokenIds = z.array(z.number().int().nonnegative());
const embeddingsWire = z.object({
    model: z.string().nullish(),
    input: z.union([z.string(), z.array(z.string()), tokenIds, z.array(tokenIds)]),
    encoding_format: z.enum(["float", "base64"]).nullish(),
    dimensions: z.number().int().positive().nullish(),
    user: z.string().nullish()
}).passthrough();

/** A POST /v1/embeddings request past the edge: each input as text or token ids. */
export interface EmbeddingsRequest {
    model: string | undefined;
    inputs: (string | number[])[];
    encodingFormat: "float" | "base64";
    dimensions: number | undefined;
}

/** Reads /v1/embeddings' body (OpenAI's shape): `input` a string, a list of strings, token ids, or a list of those. */
export function parseEmbeddingsRequest(body: unknown): EmbeddingsRequest {
    const wire = parseWire(embeddingsWire, body);
    const input = wire.input;
    const inputs: (string | number[])[] = typeof input === "string" ? [input]
        : input.length > 0 && input.every((item): item is number => typeof item === "number") ? [input]
            : input as (string | number[])[];
    if (inputs.length === 0) throw new InvalidRequestError("'input' must not be empty.", "input");
    if (inputs.length > maxEmbeddingInputs) throw new InvalidRequestError(`'input' has ${inputs.length} items; at most ${maxEmbeddingInputs} are accepted.`, "input");
    for (const [index, item] of inputs.entries()) {
        if (item.length === 0) throw new InvalidRequestError(`'input[${index}]' must not be empty.`, "input");
    }
    return { model: wire.model ?? undefined, inputs, encodingFormat: wire.encoding_format ?? "float", dimensions: wire.dimensions ?? undefined };
}

/** A vector as OpenAI's `base64` encoding sends it: its float32 values, little-endian, in base64. */
export function base64Embedding(vector: readonly number[]): string {
    const bytes = Buffer.alloc(vector.length * 4);
    for (const [index, value] of vector.entries()) bytes.writeFloatLE(value, index * 4);
    return bytes.toString("base64");
}

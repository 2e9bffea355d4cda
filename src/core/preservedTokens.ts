import type { Engine } from "../engine/types.js";
import type { PreservedTokens } from "../text/tokenTextDecoder.js";

/**
 * The special tokens among a chat format's markers (`ChatFormat.preservedTokens`) that the model's
 * vocabulary holds as one token whose text the detokenizer leaves out (a control token, such as
 * gpt-oss's `<|channel|>` or Mistral's `[TOOL_CALLS]`), so generated text keeps them for the
 * output parser. Markers that are plain text in this vocabulary (Qwen3's `<think>`, or any marker
 * on a model of another family) need nothing. Computed once per model and format.
 */
export function preservedTokens(engine: Pick<Engine, "tokenize" | "detokenize">, markers: readonly string[]): PreservedTokens | undefined {
    let byMarkers = cache.get(engine);
    if (byMarkers === undefined) cache.set(engine, byMarkers = new Map());
    const key = markers.join("\u0000");
    let found = byMarkers.get(key);
    if (found === undefined) {
        const texts = new Map<number, string>();
        for (const marker of markers) {
            const tokens = engine.tokenize(marker, { specialTokens: true });
            if (tokens.length === 1 && engine.detokenize(tokens) !== marker) texts.set(tokens[0]!, marker);
        }
        found = texts.size === 0 ? null : { tokens: new Set(texts.keys()), text: (token) => texts.get(token) ?? "" };
        byMarkers.set(key, found);
    }
    return found ?? undefined;
}

const cache = new WeakMap<object, Map<string, PreservedTokens | null>>();

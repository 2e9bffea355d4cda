/**
 * The exact bytes of one token, from its vocabulary entry, for tokens that hold only part of a
 * UTF-8 character (their decoded text is U+FFFD). llama.cpp decodes the same way
 * (`llama_token_to_piece`).
 */

/** GPT-2's byte-level BPE writes each byte as a printable character; this is the way back. */
let byteLevelDecoder: Map<string, number> | undefined;

function byteLevelTable(): Map<string, number> {
    if (byteLevelDecoder !== undefined) return byteLevelDecoder;
    const printable = (byte: number): boolean =>
        (byte >= 0x21 && byte <= 0x7e) || (byte >= 0xa1 && byte <= 0xac) || (byte >= 0xae && byte <= 0xff);
    const table = new Map<string, number>();
    let shifted = 0;
    for (let byte = 0; byte < 256; byte++) {
        if (printable(byte)) table.set(String.fromCodePoint(byte), byte);
        else table.set(String.fromCodePoint(256 + shifted++), byte);
    }
    byteLevelDecoder = table;
    return table;
}

/**
 * Bytes of a vocabulary entry: byte-level BPE ("bpe", e.g. Qwen, Llama 3) maps each character back
 * to its byte; SentencePiece ("spm") spells a lone byte `<0xE2>` and a space `▁`. Undefined when
 * the entry cannot be read that way.
 */
export function vocabularyPieceBytes(piece: string, vocabularyType: string): number[] | undefined {
    if (vocabularyType === "bpe") {
        const table = byteLevelTable();
        const bytes: number[] = [];
        for (const character of piece) {
            const byte = table.get(character);
            if (byte === undefined) return undefined;
            bytes.push(byte);
        }
        return bytes;
    }
    if (vocabularyType === "spm") {
        const byte = /^<0x([0-9A-Fa-f]{2})>$/.exec(piece);
        if (byte !== null) return [Number.parseInt(byte[1]!, 16)];
        return [...Buffer.from(piece.replace(/\u2581/g, " "), "utf8")];
    }
    return undefined;
}

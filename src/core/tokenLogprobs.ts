import type { GeneratedToken } from "../engine/types.js";
import type { TokenLogprobs } from "./parts.js";

/** What logprobs need from the engine: a token's text and exact bytes. */
export interface TokenPieces {
    tokenPiece(token: number): { text: string; bytes: number[] };
}

/** A generated token with its logprob and alternatives, each with its text and bytes. */
export function tokenLogprobs(pieces: TokenPieces, generated: GeneratedToken): TokenLogprobs {
    const piece = pieces.tokenPiece(generated.token);
    return {
        token: generated.token,
        text: piece.text,
        bytes: piece.bytes,
        logprob: generated.logprob ?? 0,
        top: (generated.topLogprobs ?? []).map((alternative) => {
            const top = pieces.tokenPiece(alternative.token);
            return { token: alternative.token, text: top.text, bytes: top.bytes, logprob: alternative.logprob };
        })
    };
}

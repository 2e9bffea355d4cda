/** A UTF-8 character spans at most 4 bytes, so at most 4 byte-level tokens. */
const maxTokensPerCharacter = 4;
const replacementCharacter = "\uFFFD";
/** Tokens of context handed to the detokenizer for leading-space decisions. */
const contextTokens = 8;

/** Special tokens whose text the output keeps (a chat format's markers), and how to write one. */
export interface PreservedTokens {
    tokens: ReadonlySet<number>;
    /** The token's own text (`<|channel|>`), which the detokenizer leaves out. */
    text(token: number): string;
}

/**
 * Turns generated tokens into text incrementally. A byte-level BPE token may carry only part of a
 * character; its text is held until the character completes. Bytes that never complete one come
 * out as U+FFFD (llama-server answers 500 there; Maple never fails on it). Special tokens come out
 * as nothing (the detokenizer's own rule), except `preserved` ones: their own text, as
 * llama-server keeps a chat format's `preserved_tokens`.
 */
export class TokenTextDecoder {
    private pending: number[] = [];
    private previous: number[] = [];

    constructor(private readonly detokenize: (tokens: readonly number[], previousTokens?: readonly number[]) => string,
        private readonly preserved?: PreservedTokens) {}

    /** Adds one token; returns the text that is now complete (often "", while a character is open). */
    push(token: number): string {
        if (this.preserved?.tokens.has(token) === true) {
            // A special token is never part of a character: what is held before it is decided.
            const before = this.flush();
            this.previous = [...this.previous, token].slice(-contextTokens);
            return before + this.preserved.text(token);
        }
        this.pending.push(token);
        const text = this.detokenize(this.pending, this.previous);
        if (text.endsWith(replacementCharacter) && this.pending.length < maxTokensPerCharacter) return "";
        return this.release(text);
    }

    /** End of generation: whatever is still held, with incomplete bytes as U+FFFD. */
    flush(): string {
        if (this.pending.length === 0) return "";
        return this.release(this.detokenize(this.pending, this.previous));
    }

    private release(text: string): string {
        this.previous = [...this.previous, ...this.pending].slice(-contextTokens);
        this.pending = [];
        return text;
    }
}

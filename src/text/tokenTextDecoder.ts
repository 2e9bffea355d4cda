/** A UTF-8 character spans at most 4 bytes, so at most 4 byte-level tokens. */
const maxTokensPerCharacter = 4;
const replacementCharacter = "\uFFFD";
/** Tokens of context handed to the detokenizer for leading-space decisions. */
const contextTokens = 8;

/**
 * Turns generated tokens into text incrementally. A byte-level BPE token may carry only part of a
 * character; its text is held until the character completes. Bytes that never complete one come
 * out as U+FFFD (llama-server answers 500 there; Maple never fails on it).
 */
export class TokenTextDecoder {
    private pending: number[] = [];
    private previous: number[] = [];

    constructor(private readonly detokenize: (tokens: readonly number[], previousTokens?: readonly number[]) => string) {}

    /** Adds one token; returns the text that is now complete (often "", while a character is open). */
    push(token: number): string {
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

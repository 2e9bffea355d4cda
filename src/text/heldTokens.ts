/**
 * Generated tokens held until the text they begin is released to the client, so what a response
 * reports per token (logprobs) lines up with the text it returns. A token begins where the raw
 * output stood when its text was decoded; tokens that decode together (the bytes of one character)
 * begin at the same place. The rule where a stop string cuts the text: a token is released once
 * its first character is, so one that straddles the cut (",w" before the stop "world") is kept
 * with the text it shares with the answer, and one that begins at or past the cut never is.
 */
export class HeldTokens<T> {
    private rawLength = 0;
    private releasedLength = 0;
    private held: { token: T; start: number }[] = [];

    /** One generated token, and the raw text decoding it completed (often "" while a character is open). */
    generated(token: T, rawText: string): void {
        this.held.push({ token, start: this.rawLength });
        this.rawLength += rawText.length;
    }

    /** Raw text that completed without a new token (the decoder's flush at the end). */
    decoded(rawText: string): void {
        this.rawLength += rawText.length;
    }

    /** `text`, the next stretch of the raw output, goes to the client: the tokens that begin in it. */
    released(text: string): T[] {
        this.releasedLength += text.length;
        let count = 0;
        while (count < this.held.length && this.held[count]!.start < this.releasedLength) count += 1;
        return this.held.splice(0, count).map((entry) => entry.token);
    }

    /** The generation ended with all its text released: every token still held (the ones without text of their own). */
    flush(): T[] {
        return this.held.splice(0).map((entry) => entry.token);
    }
}

import type { Token } from "node-llama-cpp";

/** llama.cpp's penalty window: the last 64 tokens (repeat_last_n). */
export const penaltyWindowSize = 64;

/**
 * The tokens penalties look at, kept up to date token by token. node-llama-cpp reads them when it
 * samples, which is inside the decode of the step's batch: the sequence then holds what was
 * decoded before that batch (at the first token, the cached prefix; at the next, the whole
 * prompt; then each token one step late), and that is what this window holds. Reading the
 * sequence's `contextTokens` instead copied the whole context at every token.
 */
export class PenaltyWindow {
    /** At most the last `penaltyWindowSize` tokens the sequence holds. */
    private held: Token[];
    /** The batch being decoded while the next token is sampled: the prompt's uncached part, then each sampled token. */
    private batch: readonly Token[];

    constructor(held: readonly Token[], input: readonly Token[]) {
        this.held = held.slice(-penaltyWindowSize);
        this.batch = input;
    }

    get tokens(): Token[] {
        return this.held;
    }

    /** `token` was sampled: the batch before it is now in the sequence, and `token` is decoded next. */
    decoding(token: Token): void {
        this.held = this.held.concat(this.batch.slice(-penaltyWindowSize)).slice(-penaltyWindowSize);
        this.batch = [token];
    }
}

import { sharedPrefixLength } from "../promptCache/cacheTier.js";

/**
 * How likely a slot's state is to be wanted again once its slot is reused: the share of recent
 * departures whose prompts came back, measured whether or not they were saved. A save is worth
 * what it spares only when the state returns: a conversation's next turn comes back, an agent's
 * finished session or subagent does not. Priced alone, the turn states of agents' finished
 * sessions were saved 22–24 times a run (qwen3-0.6b, 12 sessions of 3 kinds) and the run took
 * 11–13% longer; weighed by this, a workload's own history says which it is.
 *
 * A departure counts as returned when a later prompt shares at least `minimumGain` more tokens
 * with it than the saved entries held of it when it left (what a restore of it would spare), and
 * as gone once `settleAfter` later departures have passed without that; a gone departure still
 * kept (the last `kept`) that returns after all counts as returned, as twelve conversations on
 * four slots do, each after ~11 others left. Until any settle, and mixed into the few that have,
 * the odds are even (a Beta(1, 1) prior).
 */
export class ReturnOdds {
    private readonly departures: Departure[] = [];
    private departed = 0;

    constructor(private readonly minimumGain: number, private readonly settleAfter: number, private readonly kept = defaultKept) {}

    /** A slot holding `tokens` is reused; the saved entries held its first `covered` tokens. */
    left(tokens: readonly number[], covered: number): void {
        if (tokens.length - covered < this.minimumGain) return;
        this.departed += 1;
        this.departures.push({ tokens: Uint32Array.from(tokens), covered, order: this.departed, returned: false });
        if (this.departures.length > this.kept) this.departures.shift();
    }

    /** A prompt arrives: the departures it comes back to count as returned. */
    arrived(prompt: readonly number[]): void {
        for (const departure of this.departures) {
            if (!departure.returned && sharedPrefixLength(departure.tokens, prompt, departure.tokens.length) >= departure.covered + this.minimumGain) departure.returned = true;
        }
    }

    /** The estimated share of departures that return, in (0, 1). */
    get share(): number {
        let returned = 0;
        let gone = 0;
        for (const departure of this.departures) {
            if (departure.returned) returned += 1;
            else if (this.departed - departure.order >= this.settleAfter) gone += 1;
        }
        return (returned + 1) / (returned + gone + 2);
    }
}

interface Departure {
    tokens: Uint32Array;
    covered: number;
    /** Its place among all departures, 1 the first. */
    order: number;
    returned: boolean;
}

const defaultKept = 64;

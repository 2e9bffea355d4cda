export interface StopMatchResult {
    /** Text that is certainly not part of a stop string, safe to emit. */
    text: string;
    /** The stop string that matched, when one did; generation should end. */
    matched?: string;
}

/**
 * Finds stop strings in streamed text, across any split into pieces. Text that could be the start
 * of a stop string is held back until it is decided, so a stop string never reaches the client
 * and nothing after it does either (OpenAI trims the stop string from the output).
 */
export class StopMatcher {
    private held = "";
    private readonly longest: number;

    constructor(private readonly stops: readonly string[]) {
        this.longest = stops.reduce((max, stop) => Math.max(max, stop.length), 0);
    }

    push(piece: string): StopMatchResult {
        if (this.stops.length === 0) return { text: piece };
        const text = this.held + piece;
        let firstIndex = -1;
        let matched: string | undefined;
        for (const stop of this.stops) {
            const index = text.indexOf(stop);
            if (index !== -1 && (firstIndex === -1 || index < firstIndex)) {
                firstIndex = index;
                matched = stop;
            }
        }
        if (matched !== undefined) {
            this.held = "";
            return { text: text.slice(0, firstIndex), matched };
        }
        const keep = this.possibleStopStartLength(text);
        this.held = text.slice(text.length - keep);
        return { text: text.slice(0, text.length - keep) };
    }

    /** End of generation: the held text was not a stop string after all. */
    flush(): string {
        const text = this.held;
        this.held = "";
        return text;
    }

    /** Length of the longest suffix of `text` that is a proper prefix of some stop string. */
    private possibleStopStartLength(text: string): number {
        for (let length = Math.min(this.longest - 1, text.length); length > 0; length--) {
            const suffix = text.slice(text.length - length);
            if (this.stops.some((stop) => stop.startsWith(suffix))) return length;
        }
        return 0;
    }
}

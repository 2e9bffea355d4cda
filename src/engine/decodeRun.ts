import type { LlamaContextSequence, Token } from "node-llama-cpp";
import type { NativeSampler } from "./directSteps.js";

/**
 * The rebuilt addon's decode loop on a thread of its own (scripts/node-llama-cpp/decodeRunHunks.js):
 * [sequenceId, position, token, selfDecodes, credits] a sequence in `steps`.
 */
export interface NativeDecodeRuns {
    startDecodeRun(steps: Int32Array, samplers: NativeSampler[], onEvent: RunEventListener, waitMs: number): void;
    decodeRunGrant(sequenceId: number): void;
    decodeRunRelease(sequenceId: number): void;
    decodeRunStop(): void;
}

/** Rows of [sequenceId, decodedToken, sampledToken, goesOn], an error per row, a failure of the whole step, and the end. */
type RunEventListener = (rows: Int32Array | undefined, errors: (string | undefined)[] | undefined, failure: string | undefined, ended: boolean) => void;

interface SequenceInternals {
    _sequenceId: number;
    _nextTokenIndex: number;
    _contextTokens: number[];
}

/** Counts `token` as decoded in its sequence, as node-llama-cpp counts the tokens it decodes. */
export function countDecoded(sequence: LlamaContextSequence, token: Token): void {
    const internals = sequence as unknown as SequenceInternals;
    internals._nextTokenIndex += 1;
    internals._contextTokens.push(token);
}

export function sequenceId(sequence: LlamaContextSequence): number {
    return (sequence as unknown as SequenceInternals)._sequenceId;
}

/** A sequence's first step in a run: the token to decode, and how far the run may take it alone. */
export interface RunStart {
    sequence: LlamaContextSequence;
    token: Token;
    sampler: NativeSampler;
    /** Sampled tokens the run may decode on its own: the request's max tokens and the context's room. */
    selfDecodes: number;
    /** Tokens the consumer finished since this step was asked for (each lets the run decode one more). */
    credits: number;
    resolve(token: number | Error): void;
    reject(error: unknown): void;
}

interface Seat {
    sequence: LlamaContextSequence;
    waiting?: { resolve(token: number | Error): void; reject(error: unknown): void };
    /**
     * A step the run took before the decode loop asked for it: the token it decoded and what it
     * sampled after it. Kept after the run stops or ends: the token is in the slot and counted,
     * so the decode loop's next step is this one, never a second decode of the same token.
     */
    early?: DecodedAhead;
    /** The run decodes `next` (the token it sampled last) without being asked. */
    goesOn: boolean;
    next: number;
    left?: () => void;
    /** The generation is over: a step the run takes ahead for it is nobody's next step. */
    released?: boolean;
}

/** A token a run decoded before its generation asked for that step, and the outcome of the step. */
export interface DecodedAhead {
    token: number;
    outcome: number | Error;
}

/**
 * One run of the addon's native decode loop, JS's side of it: each sequence's step results go to
 * the decode loop that asks for them, and every decoded token is counted in its sequence.
 *
 * Why: a direct step hops through the main thread between two decodes (the finished job wakes the
 * event loop, JS queues the next step, libuv's pool thread wakes), and llama.cpp's threads sleep
 * through it, 0.24–0.40 ms a token on 2 cores. llama-server's decode loop samples and goes on by
 * itself. Here too the native thread decodes a sampled token at once, while the main thread
 * handles the one before; the consumer's credit (`grant`, once it is done with a token) keeps the
 * run at most one token ahead of it, as a direct step is: a consumer that stops leaves the same
 * tokens evaluated either way.
 */
export class DecodeRun {
    readonly ended: Promise<void>;
    private readonly seats = new Map<number, Seat>();
    private finished = false;

    constructor(private readonly native: NativeDecodeRuns, starts: readonly RunStart[], waitMs: number) {
        const numbers = new Int32Array(5 * starts.length);
        starts.forEach((start, index) => {
            const id = sequenceId(start.sequence);
            numbers.set([id, start.sequence.nextTokenIndex, start.token, start.selfDecodes, start.credits], 5 * index);
            this.seats.set(id, { sequence: start.sequence, waiting: { resolve: start.resolve, reject: start.reject }, goesOn: true, next: start.token });
        });
        let end!: () => void;
        this.ended = new Promise((resolve) => { end = resolve; });
        this.native.startDecodeRun(numbers, starts.map((start) => start.sampler), (rows, errors, failure, ended) => {
            if (failure !== undefined) this.fail(new Error(failure));
            if (rows !== undefined) this.settle(rows, errors);
            if (ended) {
                this.finished = true;
                this.fail(new Error("the decode run ended before this step"));
                for (const seat of this.seats.values()) seat.left?.();
                end();
            }
        }, waitMs);
    }

    /** Whether the run decoded `token` as the sequence's next one already, or will (it sampled it and goes on). */
    decodes(sequence: LlamaContextSequence, token: Token): boolean {
        const seat = this.seats.get(sequenceId(sequence));
        if (seat?.early !== undefined) {
            if (seat.early.token !== token) throw new Error(`the decode run decoded token ${seat.early.token}, not ${token}`);
            return true;
        }
        if (seat === undefined || !seat.goesOn || this.finished) return false;
        if (seat.next !== token) throw new Error(`the decode run decodes token ${seat.next}, not ${token}`);
        return true;
    }

    /** The token the run samples after the one it decodes for this sequence (see decodes). */
    next(sequence: LlamaContextSequence): Promise<number | Error> {
        const seat = this.seats.get(sequenceId(sequence))!;
        if (seat.early !== undefined) {
            const { outcome } = seat.early;
            seat.early = undefined;
            return Promise.resolve(outcome);
        }
        return new Promise((resolve, reject) => { seat.waiting = { resolve, reject }; });
    }

    /** The consumer is done with a token of this sequence: the run may decode one more. Whether the sequence is in the run. */
    grant(sequence: LlamaContextSequence): boolean {
        const seat = this.seats.get(sequenceId(sequence));
        if (seat === undefined || !seat.goesOn || this.finished) return false;
        this.native.decodeRunGrant(sequenceId(sequence));
        return true;
    }

    /** Ends the sequence's part in the run; resolves once the run no longer uses its sampler or slot. */
    release(sequence: LlamaContextSequence): Promise<void> {
        const seat = this.seats.get(sequenceId(sequence));
        if (seat === undefined) return Promise.resolve();
        seat.released = true;
        seat.early = undefined;
        if (!seat.goesOn || this.finished) return Promise.resolve();
        this.native.decodeRunRelease(sequenceId(sequence));
        return new Promise((resolve) => { seat.left = resolve; });
    }

    /** The steps the run took that no decode loop asked for yet, by sequence (read once the run ended). */
    decodedAhead(): Map<LlamaContextSequence, DecodedAhead> {
        const ahead = new Map<LlamaContextSequence, DecodedAhead>();
        for (const seat of this.seats.values()) if (seat.early !== undefined) ahead.set(seat.sequence, seat.early);
        return ahead;
    }

    /** Ends every sequence's part after the step in progress (another generation or exclusive work needs the context). */
    stop(): void {
        if (!this.finished) this.native.decodeRunStop();
    }

    private settle(rows: Int32Array, errors: (string | undefined)[] | undefined): void {
        for (let row = 0; 4 * row < rows.length; row++) {
            const seat = this.seats.get(rows[4 * row]!);
            if (seat === undefined) continue;
            countDecoded(seat.sequence, rows[4 * row + 1]! as Token);
            const error = errors?.[row];
            const outcome = error !== undefined ? new Error(error) : rows[4 * row + 2]!;
            seat.goesOn = rows[4 * row + 3] === 1;
            seat.next = rows[4 * row + 2]!;
            const waiting = seat.waiting;
            seat.waiting = undefined;
            if (waiting !== undefined) waiting.resolve(outcome);
            else if (seat.released !== true) seat.early = { token: rows[4 * row + 1]!, outcome };
            if (!seat.goesOn) seat.left?.();
        }
    }

    private fail(error: Error): void {
        for (const seat of this.seats.values()) {
            seat.goesOn = false;
            const waiting = seat.waiting;
            seat.waiting = undefined;
            waiting?.reject(error);
        }
    }
}

import type { WriteProgress } from "./ggufFileWriter.js";

type StartWrite = (signal: AbortSignal, onProgress: (progress: WriteProgress) => void) => Promise<void>;

interface Subscriber {
    readonly onProgress?: (progress: WriteProgress) => void;
}

interface SharedWrite {
    readonly done: Promise<void>;
    readonly controller: AbortController;
    readonly subscribers: Set<Subscriber>;
}

const inFlight = new Map<string, SharedWrite>();

/**
 * Runs at most one write per key in this process: concurrent callers (say, the server loading
 * a model while a CLI command writes it) wait for the same write and all get its progress.
 * Each caller's signal only cancels its own wait; the write itself is aborted once every
 * waiting caller has given up, so one impatient caller cannot fail the others.
 */
export function sharedWrite(
    key: string,
    start: StartWrite,
    options: { onProgress?: (progress: WriteProgress) => void; signal?: AbortSignal }
): Promise<void> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);

    let shared = inFlight.get(key);
    if (shared === undefined || shared.controller.signal.aborted) shared = startSharedWrite(key, start);
    const write = shared;
    const subscriber: Subscriber = { onProgress: options.onProgress };
    write.subscribers.add(subscriber);

    return new Promise<void>((resolve, reject) => {
        const giveUp = (): void => {
            write.subscribers.delete(subscriber);
            if (write.subscribers.size > 0) {
                reject(signal?.reason);
                return;
            }
            // the last caller waits for the aborted write to delete its temp file, so that once
            // its promise settles nothing of the write is left on disk
            write.controller.abort(signal?.reason);
            const rejectWithReason = (): void => reject(signal?.reason);
            write.done.then(rejectWithReason, rejectWithReason);
        };
        signal?.addEventListener("abort", giveUp, { once: true });
        write.done.then(resolve, reject).finally(() => {
            signal?.removeEventListener("abort", giveUp);
            write.subscribers.delete(subscriber);
        });
    });
}

function startSharedWrite(key: string, start: StartWrite): SharedWrite {
    const controller = new AbortController();
    const subscribers = new Set<Subscriber>();
    const done = start(controller.signal, (progress) => {
        for (const subscriber of subscribers) subscriber.onProgress?.(progress);
    }).finally(() => {
        // a newer write may have replaced this aborted one under the same key
        if (inFlight.get(key) === shared) inFlight.delete(key);
    });
    const shared: SharedWrite = { done, controller, subscribers };
    inFlight.set(key, shared);
    return shared;
}

import { setTimeout as sleep } from "node:timers/promises";

/**
 * Polls `probe` until it returns a value other than undefined; throws naming `what` after a
 * generous deadline. For waiting on server state, never for asserting how long something took.
 */
export async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 10_000, intervalMs = 20): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const value = await probe();
        if (value !== undefined) return value;
        if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
        await sleep(intervalMs);
    }
}

/** The /health fields the queue and cancellation tests watch. */
export interface HealthLoad {
    status: string;
    queue_depth: number;
    active: number;
}

/** GET /health as JSON. */
export async function readHealth(server: { request(path: string): Promise<Response> }): Promise<HealthLoad & Record<string, unknown>> {
    return await (await server.request("/health")).json() as HealthLoad & Record<string, unknown>;
}

/** Polls /health until `accept` holds for it, and returns that reading. */
export function waitForHealth(server: { request(path: string): Promise<Response> }, accept: (health: HealthLoad) => boolean,
    what: string, timeoutMs = 10_000): Promise<HealthLoad & Record<string, unknown>> {
    return waitFor(async () => {
        const health = await readHealth(server);
        return accept(health) ? health : undefined;
    }, what, timeoutMs);
}

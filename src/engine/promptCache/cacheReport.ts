import type { PromptCacheReport } from "../types.js";
import type { PromptCacheEvent } from "./promptCache.js";

/** The prompt cache's events, counted for /metrics. */
export class CacheReport {
    private readonly counts = {
        saves: { ram: 0, disk: 0 }, restores: { ram: 0, disk: 0 }, evictions: { ram: 0, disk: 0 }, ignored: { ram: 0, disk: 0 }, restoredTokens: 0,
        preambleSaves: { ram: 0, disk: 0 }, preambleRestores: { ram: 0, disk: 0 }
    };

    private restoreSeconds: { seconds: number; waitSeconds: number }[] = [];

    record(event: PromptCacheEvent): void {
        switch (event.kind) {
            case "save":
                this.counts.saves[event.tier] += 1;
                if (event.preamble) this.counts.preambleSaves[event.tier] += 1;
                break;
            case "evict": this.counts.evictions[event.tier] += 1; break;
            case "ignore": this.counts.ignored[event.tier] += 1; break;
            case "restore":
                this.counts.restores[event.tier] += 1;
                if (event.preamble) this.counts.preambleRestores[event.tier] += 1;
                this.counts.restoredTokens += event.tokens;
                // Bounded: a server nobody scrapes keeps only the latest.
                if (this.restoreSeconds.length < 10_000) this.restoreSeconds.push({ seconds: event.seconds, waitSeconds: event.waitSeconds });
                break;
        }
    }

    snapshot(bytes: PromptCacheReport["bytes"], limitBytes: PromptCacheReport["limitBytes"], saveRule: PromptCacheReport["saveRule"]): PromptCacheReport {
        const counts = structuredClone(this.counts);
        return {
            ...counts, bytes, limitBytes, saveRule,
            takeRestoreSeconds: () => {
                const taken = this.restoreSeconds;
                this.restoreSeconds = [];
                return taken;
            }
        };
    }
}

import type { MapleConfig } from "../config/settings.js";
import { MemoryResponseStore } from "./memoryResponseStore.js";
import { RedisResponseStore, type StoreLogger } from "./redisResponseStore.js";
import type { ResponseStore, ResponseStoreLimits } from "./responseStore.js";

type StoreSettings = Pick<MapleConfig, "responsesStore" | "responsesStoreMaxCount" | "responsesStoreMaxBytes" | "responsesStoreTtlSeconds">;

/** The MAPLE_RESPONSES_STORE_* bounds. */
export function responseStoreLimits(config: Omit<StoreSettings, "responsesStore">): ResponseStoreLimits {
    return { maxCount: config.responsesStoreMaxCount, maxBytes: config.responsesStoreMaxBytes, ttlMs: config.responsesStoreTtlSeconds * 1000 };
}

/** The response store MAPLE_RESPONSES_STORE names, with the MAPLE_RESPONSES_STORE_* bounds. Redis connects in the background. */
export function openResponseStore(config: StoreSettings, logger: StoreLogger): ResponseStore {
    const limits = responseStoreLimits(config);
    return config.responsesStore === "memory" ? new MemoryResponseStore(limits) : new RedisResponseStore({ url: config.responsesStore, limits, logger });
}

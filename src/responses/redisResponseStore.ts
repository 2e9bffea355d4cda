import { randomBytes } from "node:crypto";
import { createClient, type RedisClientType } from "redis";
import type { Logger } from "pino";
import { StoreUnavailableError } from "../errors.js";
import { outputItems, storedSize, type ResponseStore, type ResponseStoreLimits, type ResponseStoreState, type StoredResponse } from "./responseStore.js";

/** What the store logs with (pino's, or Fastify's logger). */
export type StoreLogger = Pick<Logger, "info" | "warn">;

export interface RedisResponseStoreOptions {
    /** `redis://` or `rediss://` (TLS), with credentials and database number as the URL gives them. */
    url: string;
    limits: ResponseStoreLimits;
    logger: StoreLogger;
    /** Key and channel prefix, so several fleets can share one Redis. */
    prefix?: string;
    /** How long a command (or a connection attempt) may take before the request is refused with 503. */
    timeoutMs?: number;
}

/**
 * Keys (all under `prefix`): `r:{id}` the response's JSON, expiring with the TTL; `i:{itemId}` a
 * hash naming the response an output item belongs to and the item's JSON, expiring with it;
 * `index`, a sorted set of response ids by expiry time (one TTL for all, so also by age); `sizes`,
 * each response's size; `items`, each response's output item ids (a JSON array), so that dropping
 * a response (evicted, expired, replaced or deleted) deletes its `i:` keys too instead of leaving
 * them to their TTL; `bytes`, the sum of the sizes. One script does each change, so replicas never
 * see half of one and the count and byte bounds hold across the fleet. Standalone Redis ≥ 6 or
 * Valkey (not Redis Cluster: the scripts compute their keys).
 */
const removeFunction = `
local p = ARGV[1]
local function remove(id)
  local bytes = redis.call('HGET', p .. 'sizes', id)
  redis.call('DEL', p .. 'r:' .. id)
  local items = redis.call('HGET', p .. 'items', id)
  if items then
    for _, item in ipairs(cjson.decode(items)) do
      -- An item id stored again by a later response belongs to that one now.
      if redis.call('HGET', p .. 'i:' .. item, 'r') == id then redis.call('DEL', p .. 'i:' .. item) end
    end
    redis.call('HDEL', p .. 'items', id)
  end
  if not bytes then return end
  redis.call('HDEL', p .. 'sizes', id)
  redis.call('ZREM', p .. 'index', id)
  redis.call('DECRBY', p .. 'bytes', bytes)
end
local function expire(now)
  local expired = redis.call('ZRANGEBYSCORE', p .. 'index', '-inf', now, 'LIMIT', 0, 1000)
  for _, id in ipairs(expired) do remove(id) end
end
`;

/** ARGV: prefix, id, json, bytes, ttlMs, maxCount, maxBytes, now, itemIds (a JSON array), then itemId, itemJson pairs. */
const putScript = `${removeFunction}
local id, json, bytes, ttl = ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local maxCount, maxBytes, now = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
remove(id)
if maxCount == 0 or bytes > maxBytes then return 0 end
expire(now)
while redis.call('ZCARD', p .. 'index') >= maxCount or tonumber(redis.call('GET', p .. 'bytes') or '0') + bytes > maxBytes do
  local oldest = redis.call('ZRANGE', p .. 'index', 0, 0)[1]
  if not oldest then break end
  remove(oldest)
end
redis.call('SET', p .. 'r:' .. id, json, 'PX', ttl)
redis.call('HSET', p .. 'sizes', id, bytes)
redis.call('ZADD', p .. 'index', now + ttl, id)
redis.call('INCRBY', p .. 'bytes', bytes)
redis.call('HSET', p .. 'items', id, ARGV[9])
for i = 10, #ARGV, 2 do
  redis.call('HSET', p .. 'i:' .. ARGV[i], 'r', id, 'j', ARGV[i + 1])
  redis.call('PEXPIRE', p .. 'i:' .. ARGV[i], ttl)
end
return 1
`;

/** ARGV: prefix, id. 1 when the response was there. */
const deleteScript = `${removeFunction}
local existed = redis.call('EXISTS', p .. 'r:' .. ARGV[2])
remove(ARGV[2])
return existed
`;

/** ARGV: prefix, itemId: the item's JSON while its response is still stored. */
const itemScript = `
local p = ARGV[1]
local owner = redis.call('HGET', p .. 'i:' .. ARGV[2], 'r')
if not owner or redis.call('EXISTS', p .. 'r:' .. owner) == 0 then return false end
return redis.call('HGET', p .. 'i:' .. ARGV[2], 'j')
`;

/** A cancel asked on one replica for a response another runs: published to every replica, answered by the one running it. */
interface CancelMessage {
    id: string;
    replyTo: string;
}

/** How long a cancel waits for the replicas' answers before concluding that none runs the response. */
const cancelWaitMs = 2000;

/**
 * Stored responses in Redis (MAPLE_RESPONSES_STORE=redis://…), shared by every replica:
 * `previous_response_id`, GET, DELETE and input_items work whichever replica a request reaches,
 * and a replica's loss loses nothing stored. With the offline queue off and a bounded command
 * timeout, every call fails fast (StoreUnavailableError → 503 with Retry-After) while Redis is
 * down, and the client reconnects by itself. Cancels reach the replica running a response by
 * pub/sub on `{prefix}cancel`.
 */
export class RedisResponseStore implements ResponseStore {
    private readonly client: RedisClientType;
    private readonly subscriber: RedisClientType;
    private readonly prefix: string;
    private readonly logger: StoreLogger;
    private readonly limits: ResponseStoreLimits;
    private readonly timeoutMs: number;
    private cancelHandler: (id: string) => Record<string, unknown> | undefined = () => undefined;
    /** The replies channel of this replica's own cancels: `{prefix}cancelled:{random}`. */
    private readonly replyChannel: string;
    private readonly waitingCancels = new Map<string, (reply: Record<string, unknown> | null) => void>();
    private everConnected = false;
    private closed = false;

    constructor(options: RedisResponseStoreOptions) {
        this.prefix = options.prefix ?? "maple:responses:";
        this.logger = options.logger;
        this.limits = options.limits;
        this.timeoutMs = options.timeoutMs ?? 2000;
        this.replyChannel = `${this.prefix}cancelled:${randomBytes(8).toString("hex")}`;
        this.client = createClient({
            url: options.url,
            // While disconnected, commands fail at once instead of waiting in a queue for a Redis that may not come back.
            disableOfflineQueue: true,
            commandOptions: { timeout: this.timeoutMs },
            socket: {
                connectTimeout: this.timeoutMs,
                // Retry for ever, backing off to one attempt a second: Maple reconnects by itself.
                reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1000)
            }
        }) as RedisClientType;
        this.subscriber = this.client.duplicate();
        this.watch(this.client, "store");
        this.watch(this.subscriber, "cancel channel");
        void this.connect();
    }

    get state(): ResponseStoreState {
        if (this.client.isReady) return "ready";
        return this.everConnected ? "unreachable" : "connecting";
    }

    requireAvailable(): void {
        if (!this.client.isReady) throw new StoreUnavailableError();
    }

    async put(stored: StoredResponse): Promise<void> {
        const json = JSON.stringify(stored);
        const items = outputItems(stored).filter((item) => typeof item["id"] === "string");
        const itemIds = items.map((item) => item["id"] as string);
        const { maxCount, maxBytes, ttlMs } = this.limits;
        await this.call(() => this.client.eval(putScript, {
            arguments: [this.prefix, stored.id, json, String(storedSize(json)), String(Math.round(ttlMs)), String(maxCount), String(maxBytes), String(Date.now()),
                JSON.stringify(itemIds), ...items.flatMap((item) => [item["id"] as string, JSON.stringify(item)])]
        }));
    }

    async get(id: string): Promise<StoredResponse | undefined> {
        const json = await this.call(() => this.client.get(`${this.prefix}r:${id}`));
        return json === null ? undefined : JSON.parse(json) as StoredResponse;
    }

    async item(id: string): Promise<Record<string, unknown> | undefined> {
        const json = await this.call(() => this.client.eval(itemScript, { arguments: [this.prefix, id] }));
        return typeof json === "string" ? JSON.parse(json) as Record<string, unknown> : undefined;
    }

    async delete(id: string): Promise<boolean> {
        return await this.call(() => this.client.eval(deleteScript, { arguments: [this.prefix, id] })) === 1;
    }

    onCancelRequest(handler: (id: string) => Record<string, unknown> | undefined): void {
        this.cancelHandler = handler;
    }

    /**
     * Publishes the cancel to every replica and waits for their answers: the one running `id`
     * answers with the cancelled response, the others with null. Resolves at the first response,
     * or undefined once every replica said no (or none answered in time).
     */
    async cancelElsewhere(id: string): Promise<Record<string, unknown> | undefined> {
        const request = randomBytes(8).toString("hex");
        let answers = 0;
        let expected = Number.POSITIVE_INFINITY;
        const reply = new Promise<Record<string, unknown> | undefined>((resolve) => {
            const timer = setTimeout(() => finish(undefined), cancelWaitMs);
            const finish = (value: Record<string, unknown> | undefined): void => {
                clearTimeout(timer);
                this.waitingCancels.delete(request);
                resolve(value);
            };
            this.waitingCancels.set(request, (response) => {
                answers += 1;
                if (response !== null) finish(response);
                else if (answers >= expected) finish(undefined);
            });
        });
        const message: CancelMessage = { id, replyTo: `${this.replyChannel}:${request}` };
        try {
            // This replica's own subscriber receives it too and answers null (its handler does not run `id`).
            expected = await this.call(() => this.client.publish(`${this.prefix}cancel`, JSON.stringify(message)));
        } catch (error) {
            this.waitingCancels.get(request)?.(null);
            this.waitingCancels.delete(request);
            throw error;
        }
        if (answers >= expected) this.waitingCancels.get(request)?.(null);
        return reply;
    }

    /** Called once the server stopped serving: nothing waits on Redis any more, so it drops the connections at once (a hung Redis cannot hold up a shutdown). */
    async close(): Promise<void> {
        this.closed = true;
        for (const client of [this.client, this.subscriber]) if (client.isOpen) client.destroy();
    }

    private async connect(): Promise<void> {
        try {
            await this.client.connect();
            await this.subscriber.connect();
            await this.subscriber.subscribe(`${this.prefix}cancel`, (message) => void this.answerCancel(message));
            await this.subscriber.pSubscribe(`${this.replyChannel}:*`, (message, channel) => {
                const request = channel.slice(this.replyChannel.length + 1);
                this.waitingCancels.get(request)?.(JSON.parse(message) as Record<string, unknown> | null);
            });
        } catch (error) {
            // reconnectStrategy retries for ever; a connect() that gives up (closed meanwhile) ends here.
            if (!this.closed) this.logger.warn({ err: error }, "response store: connecting to Redis failed");
        }
    }

    private async answerCancel(raw: string): Promise<void> {
        let message: CancelMessage;
        try {
            message = JSON.parse(raw) as CancelMessage;
        } catch {
            return;
        }
        const cancelled = this.cancelHandler(message.id) ?? null;
        await this.client.publish(message.replyTo, JSON.stringify(cancelled)).catch((error: unknown) => {
            this.logger.warn({ err: error }, "response store: could not answer a cancel");
        });
    }

    /** Logs connection changes once each (an unhandled `error` event would end the process). */
    private watch(client: RedisClientType, role: string): void {
        let down = false;
        client.on("ready", () => {
            if (role === "store") this.everConnected = true;
            if (down) this.logger.info(`response store: ${role} reconnected to Redis`);
            down = false;
        });
        client.on("error", (error: Error) => {
            if (!down) this.logger.warn({ err: error }, `response store: ${role} lost Redis; reconnecting`);
            down = true;
        });
    }

    /**
     * Runs a command; any failure to get Redis's answer in time (offline, reset, no answer within
     * `timeoutMs`) is the store being unavailable. The deadline is kept here: node-redis's own
     * command timeout only covers commands not yet written, and a hung Redis (stopped, partitioned)
     * keeps the connection open while it answers nothing.
     */
    private async call<T>(command: () => Promise<T>): Promise<T> {
        if (!this.client.isReady) throw new StoreUnavailableError();
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<never>((_resolve, reject) => {
            timer = setTimeout(() => reject(new Error(`Redis did not answer within ${this.timeoutMs} ms`)), this.timeoutMs);
        });
        try {
            return await Promise.race([command(), deadline]);
        } catch (error) {
            throw new StoreUnavailableError(undefined, error);
        } finally {
            clearTimeout(timer);
        }
    }
}

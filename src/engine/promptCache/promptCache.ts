import { randomBytes } from "node:crypto";
import { existsSync, rmSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, statfs } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CacheTier, nextUse, type CacheEntry, type PrefixMatch, type TierName } from "./cacheTier.js";
import { diskEntryFiles, fileChecksum, readDiskEntries, writeDiskEntry } from "./diskEntries.js";
import { ramTierRoom } from "./ramTierRoom.js";

export type { CacheEntry, PrefixMatch, TierName };

export type PromptCacheEvent =
    | { kind: "save"; tier: TierName; bytes: number; tokens: number; preamble: boolean }
    /** `seconds`: the restore's own time (the load, and a disk entry's checksum); `waitSeconds`: its wait for the context. */
    | { kind: "restore"; tier: TierName; tokens: number; seconds: number; waitSeconds: number; preamble: boolean }
    | { kind: "evict"; tier: TierName; bytes: number }
    /** An entry found unusable (another model's, corrupted, or one llama.cpp refused) and left unloaded. */
    | { kind: "ignore"; tier: TierName };

export interface PromptCacheOptions {
    /** Bytes of saved states kept in host memory (a tmpfs directory); 0 for none. */
    ramBytes: number;
    /** Where the disk tier keeps states across restarts; with `diskBytes`, its bound. */
    diskDir?: string;
    diskBytes: number;
    /** The model file and state layout (modelIdentity): entries of any other identity are never loaded. */
    identity: string;
    /** Tokens a slot holds at most: longer entries are ignored. */
    maxTokens: number;
    /** The model's sliding attention window in tokens, 0 when it has none: it limits which prompts an entry serves (see CacheTier). */
    slidingWindow: number;
    onEvent?: (event: PromptCacheEvent) => void;
    /** Where the RAM tier's directory goes; default /dev/shm (tmpfs), else the OS temp dir. */
    ramRoot?: string;
    /** Told when the RAM tier's directory has less room than `ramBytes` (ramTierRoom), once, at open. */
    onShortfall?: (message: string) => void;
}

const ramDirPrefix = "maple-prompt-cache-";

/**
 * Saved slot states in two tiers. llama.cpp writes and reads them as files (node-llama-cpp 3.22.1
 * has no in-memory state API), so the RAM tier is a directory on tmpfs: its pages are host memory
 * (counted as shared memory, not in Maple's RSS) and a restore is a memory copy. The disk tier,
 * when configured, gets a copy of every saved state in the background, keyed by the model's
 * identity, and is read back on the next start.
 */
export class PromptCache {
    private readonly tiers: CacheTier[] = [];
    /** Disk copies run one at a time, after the save that produced them, off the step barrier. */
    private diskWrites: Promise<void> = Promise.resolve();
    private readonly removeOnExit: () => void;

    private constructor(
        private readonly options: PromptCacheOptions,
        readonly ram: CacheTier | undefined,
        readonly disk: CacheTier | undefined,
        private readonly ramDir: string | undefined
    ) {
        for (const tier of [ram, disk]) if (tier !== undefined) this.tiers.push(tier);
        this.removeOnExit = () => {
            if (ramDir !== undefined) rmSync(ramDir, { recursive: true, force: true });
        };
        process.once("exit", this.removeOnExit);
    }

    static async open(options: PromptCacheOptions): Promise<PromptCache | undefined> {
        const emit = options.onEvent ?? ((): void => undefined);
        const onEvict = (entry: CacheEntry): void => emit({ kind: "evict", tier: entry.tier, bytes: entry.bytes });
        let ram: CacheTier | undefined;
        let ramDir: string | undefined;
        if (options.ramBytes > 0) {
            const root = options.ramRoot ?? (existsSync("/dev/shm") ? "/dev/shm" : tmpdir());
            await removeAbandonedRamDirs(root);
            ramDir = await mkdtemp(join(root, `${ramDirPrefix}${process.pid}-`));
            // Never more than the tmpfs can take (a container's /dev/shm is 64 MiB unless raised).
            const free = await statfs(root).then((stats) => stats.bavail * stats.bsize, () => Number.POSITIVE_INFINITY);
            const room = ramTierRoom(options.ramBytes, root, free);
            if (room.shortfall !== undefined) options.onShortfall?.(room.shortfall);
            ram = new CacheTier("ram", ramDir, room.boundBytes, onEvict, options.slidingWindow);
        }
        let disk: CacheTier | undefined;
        if (options.diskDir !== undefined && options.diskBytes > 0) {
            const dir = join(options.diskDir, options.identity);
            await mkdir(dir, { recursive: true });
            disk = new CacheTier("disk", dir, options.diskBytes, onEvict, options.slidingWindow);
            const { found, ignored } = await readDiskEntries(dir, options.identity, options.maxTokens);
            for (let index = 0; index < ignored; index += 1) emit({ kind: "ignore", tier: "disk" });
            // Oldest first, so the bound keeps the newest.
            for (const { id, files, manifest } of found.sort((a, b) => a.manifest.savedAt - b.manifest.savedAt)) {
                disk.add({
                    id, tier: "disk", tokens: manifest.tokens, bytes: manifest.bytes, key: manifest.key, file: files.state,
                    companions: [files.manifest], verified: false, checksum: manifest.crc32, lastUsed: nextUse(), pins: 0, preamble: manifest.preamble === true
                });
            }
        }
        if (ram === undefined && disk === undefined) return undefined;
        return new PromptCache(options, ram, disk, ramDir);
    }

    /** The saved entry sharing the longest prefix with the prompt's first `limit` tokens; host memory wins a tie. */
    longestMatch(prompt: readonly number[], limit: number, key: string | undefined): PrefixMatch | undefined {
        let best: PrefixMatch | undefined;
        for (const tier of this.tiers) {
            const match = tier.longestMatch(prompt, limit, key);
            if (match !== undefined && (best === undefined || match.shared > best.shared)) best = match;
        }
        return best;
    }

    /** The most of the prompt's first `limit` tokens any entry holds, whether or not it serves them (see CacheTier.longestShared). */
    longestShared(prompt: readonly number[], limit: number): number {
        return Math.max(0, ...this.tiers.map((tier) => tier.longestShared(prompt, limit)));
    }

    /** Records a prompt no entry served (see CacheTier.noteMiss). */
    noteMiss(prompt: readonly number[], limit: number): void {
        for (const tier of this.tiers) tier.noteMiss(prompt, limit);
    }

    /** Whether `entry` is still held (not evicted). */
    holds(entry: CacheEntry): boolean {
        return this.tiers.some((tier) => tier.has(entry));
    }

    /**
     * Saves a state: `write` (run by the caller under its step barrier) writes it to the file it
     * is given and returns the bytes written. The disk tier gets its copy in the background.
     * `loopStart`: the state is a tool loop's turn, whose conversation's entry at the loop's start
     * stays (see CacheTier.droppable).
     */
    async save(tokens: readonly number[], key: string | undefined, write: (file: string) => Promise<number>,
        options: { preamble?: boolean; loopStart?: number } = {}): Promise<CacheEntry | undefined> {
        const preamble = options.preamble === true;
        const { loopStart } = options;
        const id = `${Date.now().toString(36)}-${randomBytes(6).toString("hex")}`;
        const target = this.ram ?? this.disk!;
        const staged = this.ram === undefined;
        const file = staged ? join(target.dir, `${id}.staged`) : join(target.dir, `${id}.state`);
        const proven = staged ? false : await this.ram!.dropSuperseded(tokens, key, loopStart);
        const bytes = await write(file).catch(async (error: unknown) => {
            await rm(file, { force: true });
            throw error;
        });
        const savedTokens = [...tokens];
        let entry: CacheEntry | undefined;
        if (!staged) {
            entry = { id, tier: "ram", tokens: savedTokens, bytes, key, file, companions: [], verified: true, lastUsed: nextUse(), pins: 0, preamble, proven };
            if (!this.ram!.add(entry, loopStart)) entry = undefined;
            else this.emit({ kind: "save", tier: "ram", bytes, tokens: savedTokens.length, preamble });
        }
        if (this.disk !== undefined && (entry !== undefined || staged)) this.copyToDisk(id, file, savedTokens, bytes, key, { preamble, loopStart }, entry, staged);
        return entry;
    }

    /** Waits for the disk copies queued so far (tests; shutdown). */
    async flush(): Promise<void> {
        await this.diskWrites;
    }

    /**
     * Restores an entry through `load` (run by the caller under its step barrier), which returns
     * the tokens the sequence then holds and the load's own milliseconds, without its wait for the
     * context (undefined: not timed apart). A disk entry from an earlier run is checked against its
     * manifest's checksum first. Returns false, and drops the entry, when it cannot be used.
     */
    async restore(entry: CacheEntry, load: (file: string) => Promise<{ tokens: readonly number[]; milliseconds?: number }>): Promise<boolean> {
        const tier = entry.tier === "ram" ? this.ram : this.disk;
        if (tier === undefined || !tier.has(entry)) return false;
        entry.pins += 1;
        const startedAt = performance.now();
        try {
            if (!entry.verified) {
                if (entry.checksum === undefined || await fileChecksum(entry.file).catch(() => undefined) !== entry.checksum) return this.reject(tier, entry);
                entry.verified = true;
            }
            const checkedAt = performance.now();
            const loaded = await load(entry.file).catch(() => undefined);
            const tokens = loaded?.tokens;
            if (tokens === undefined || tokens.length !== entry.tokens.length || tokens.some((token, index) => token !== entry.tokens[index])) {
                return this.reject(tier, entry);
            }
            entry.lastUsed = nextUse();
            entry.proven = true;
            const wholeMs = performance.now() - startedAt;
            const ownMs = Math.min(wholeMs, (checkedAt - startedAt) + (loaded!.milliseconds ?? performance.now() - checkedAt));
            this.emit({ kind: "restore", tier: entry.tier, tokens: tokens.length, seconds: ownMs / 1000, waitSeconds: (wholeMs - ownMs) / 1000, preamble: entry.preamble === true });
            return true;
        } finally {
            entry.pins -= 1;
        }
    }

    stats(): { bytes: Record<TierName, number>; entries: Record<TierName, number>; limits: Record<TierName, number> } {
        return {
            bytes: { ram: this.ram?.bytes ?? 0, disk: this.disk?.bytes ?? 0 },
            entries: { ram: this.ram?.size ?? 0, disk: this.disk?.size ?? 0 },
            limits: { ram: this.ram?.limitBytes ?? 0, disk: this.disk?.limitBytes ?? 0 }
        };
    }

    /** Deletes the RAM tier's files; the disk tier's stay for the next start. */
    async dispose(): Promise<void> {
        await this.diskWrites;
        process.off("exit", this.removeOnExit);
        this.ram?.forget();
        this.disk?.forget();
        if (this.ramDir !== undefined) await rm(this.ramDir, { recursive: true, force: true });
    }

    private copyToDisk(id: string, source: string, tokens: readonly number[], bytes: number, key: string | undefined,
        { preamble, loopStart }: { preamble: boolean; loopStart: number | undefined }, ramEntry: CacheEntry | undefined, staged: boolean): void {
        const disk = this.disk!;
        if (ramEntry !== undefined) ramEntry.pins += 1;
        this.diskWrites = this.diskWrites.then(async () => {
            const files = diskEntryFiles(disk.dir, id);
            try {
                await writeDiskEntry(source, files, { identity: this.options.identity, tokens: [...tokens], bytes, key, savedAt: Date.now(), preamble });
                const entry: CacheEntry = {
                    id, tier: "disk", tokens, bytes, key, file: files.state, companions: [files.manifest], verified: true, lastUsed: nextUse(), pins: 0,
                    preamble
                };
                if (disk.add(entry, loopStart)) this.emit({ kind: "save", tier: "disk", bytes, tokens: tokens.length, preamble });
            } catch {
                // The disk tier is best effort: a full or failing disk costs only this copy.
            } finally {
                if (ramEntry !== undefined) ramEntry.pins -= 1;
                if (staged) await rm(source, { force: true });
            }
        });
    }

    private reject(tier: CacheTier, entry: CacheEntry): false {
        void tier.delete(entry, false);
        this.emit({ kind: "ignore", tier: tier.name });
        return false;
    }

    private emit(event: PromptCacheEvent): void {
        this.options.onEvent?.(event);
    }
}

/** RAM tier directories of Maple processes that ended without removing theirs (killed). */
async function removeAbandonedRamDirs(root: string): Promise<void> {
    const names = await readdir(root).catch(() => [] as string[]);
    for (const name of names) {
        const pid = Number(/^maple-prompt-cache-(\d+)-/.exec(name)?.[1]);
        if (!Number.isInteger(pid) || pid === process.pid || processAlive(pid)) continue;
        await rm(join(root, name), { recursive: true, force: true }).catch(() => undefined);
    }
}

function processAlive(pid: number): boolean {
    try {
        process.kill(pid, 0);
        return true;
    } catch (error) {
        return (error as NodeJS.ErrnoException).code === "EPERM";
    }
}

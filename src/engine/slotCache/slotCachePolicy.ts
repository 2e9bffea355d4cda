import { sharedPrefixLength } from "../promptCache/cacheTier.js";
import type { CacheEntry, PromptCache } from "../promptCache/promptCache.js";
import type { StateCosts } from "../stateCosts.js";
import {
    defaultSaveToPrefillRatio, minimumRestoreGain, minimumSavedTokens, mostErased, restoreGains, reuseCost, savePlan, turnPrefixOf, worthSaving
} from "./cacheRules.js";
import { mostReusedSlotStrategy } from "./mostReusedSlotStrategy.js";
import { ReturnOdds } from "./returnOdds.js";
import type { SlotStore } from "./slotStore.js";

export interface SlotCachePolicyOptions {
    store: SlotStore;
    /** The saved states beyond the slots; without it, slots are only reused by their own prefix. */
    cache: PromptCache | undefined;
    /** The model's sliding attention window in tokens, 0 when it has none (see savePlan). */
    slidingWindow: number;
    /** The measured costs of a save and of a prompt evaluation (see StateCosts). */
    costs: StateCosts;
}

/** A slot readied for a prompt (see SlotCachePolicy.prepare). */
export interface PreparedSlot {
    /** Prompt tokens reused without evaluation (what usage reports). */
    cached: number;
    /** Prompt tokens the slot holds now: its generation evaluates the rest. */
    held: number;
    /** Whether the generation keeps a checkpoint once the prompt is evaluated (store.checkpoint), for the next turn's cut. */
    checkpointAfterPrompt: boolean;
}

/**
 * How many tokens before a prompt's end a checkpoint taken at its end serves the next turn's cut:
 * the cut needs the window before it, and llama.cpp's windowed cache holds the window and a batch
 * of cells (the cut is checked against the checkpoint's oldest cell when it is made). The next turn
 * leaves a chat prompt at its assistant header, a few tokens before the end.
 */
const checkpointReach = 64;

/** What the policy remembers of a slot between its requests. */
interface SlotMemory {
    /** The conversation key of the last request it served. */
    key: string | undefined;
    /** The saved entry its leading tokens match. */
    saved: CacheEntry | undefined;
    /** How many of its last prompt's tokens the conversation's next prompt will repeat. */
    turnPrefix: number | undefined;
    /** Inside a tool loop: how many the user's next message will repeat, where the loop began (see GenerationRequest.loopStartPrefix). */
    loopStart: number | undefined;
}

/**
 * Decides what the slots keep and what the prompt cache holds (docs/prompt-cache-design.md):
 * which free slot a prompt goes to, when a slot's state is saved before it is reused, and whether
 * a saved state is restored or the prompt evaluated. The slots are a SlotStore and the saved
 * states a PromptCache (the storage); the rules and their constants are in cacheRules.ts.
 */
export class SlotCachePolicy {
    private readonly memory: SlotMemory[];
    /**
     * Saves in progress, with the tokens each holds. Requests arriving together take their slots
     * before the states those slots held are saved: the one whose own state is being saved waits
     * for it (a restore) rather than evaluating its prompt again (as llama-server, whose loop saves
     * and restores in turn).
     */
    private readonly pendingSaves = new Map<Promise<void>, readonly number[]>();
    /**
     * The preambles being evaluated and saved (see preambleKey), each with when that ends: a
     * request starting with one waits for it and restores it rather than evaluating it again, as
     * prefix caches that share a prefix still being computed do (vLLM, SGLang). Measured on
     * qwen3-0.6b: two sessions of one agent kind arriving together each evaluated its ~1,000-token
     * preamble cold.
     */
    private readonly preamblesSaving = new Map<string, Promise<void>>();
    /** How often a slot's state is wanted again after its slot is reused: what a turn state's save is worth. */
    private readonly returns: ReturnOdds;

    constructor(private readonly options: SlotCachePolicyOptions) {
        this.memory = Array.from({ length: options.store.slots }, () => ({ key: undefined, saved: undefined, turnPrefix: undefined, loopStart: undefined }));
        // Settled after two slots' worth of others left: an agents run's finished sessions count as gone within a few new ones.
        this.returns = new ReturnOdds(minimumRestoreGain, Math.max(minimumSettleAfter, 2 * options.store.slots));
    }

    /**
     * The free slot for a prompt (see mostReusedSlotStrategy); `free` least recently used first.
     * An empty prompt (the other slots of n > 1 choices, which get the first one's state copied
     * in) takes the slot cheapest to lose.
     */
    chooseSlot(free: readonly number[], prompt: readonly number[], key: string | undefined): number {
        const saved = prompt.length === 0 ? 0 : this.options.cache?.longestMatch(prompt, prompt.length, key)?.shared ?? 0;
        return mostReusedSlotStrategy({
            candidates: free.map((slot) => ({
                slot,
                reused: Math.max(this.cachedPrefixLength(slot, prompt), saved),
                lost: this.reuseCost(slot, prompt),
                ownKey: key !== undefined && this.slotKey(slot) === key
            }))
        });
    }

    /** The conversation key of the last request slot `slot` served. */
    slotKey(slot: number): string | undefined {
        return this.memoryOf(slot).key;
    }

    /**
     * Readies a slot for a prompt: saves what the slot holds when most of it is about to be
     * erased and no entry holds it yet, restores the saved state sharing the longest prefix when
     * it beats the slot's own, then erases whatever follows the shared prefix. With a `preamble`
     * (the prompt's first tokens that other sessions start with too, see GenerationRequest) that
     * no entry holds, it evaluates the prompt up to the preamble's end and saves that state, so
     * later sessions restore it (see savePreamble). Returns `cached`, the prompt tokens reused
     * without evaluation (what usage reports), and `held`, the prompt tokens the slot holds now
     * (its generation evaluates the rest). At least one prompt token is always evaluated again,
     * since sampling needs the logits of the prompt's last position. With `checkpointAfterPrompt`,
     * the generation keeps a checkpoint once the prompt is evaluated, if it goes on past it.
     * `loopStart` (a tool loop's, see GenerationRequest.loopStartPrefix): the conversation's saved
     * state there outlasts the loop's later states, and the slot's checkpoint there its later ones.
     */
    async prepare(slot: number, prompt: readonly number[], key: string | undefined, nextTurnPrefix: number | undefined,
        preamble?: number, loopStart?: number): Promise<PreparedSlot> {
        const { cache } = this.options;
        const releasePreamble = cache !== undefined && preamble !== undefined ? await this.claimPreamble(slot, prompt, preamble, cache) : undefined;
        try {
            return await this.prepareClaimed(slot, prompt, key, { nextTurnPrefix, loopStart }, releasePreamble === undefined ? undefined : preamble, preamble);
        } finally {
            releasePreamble?.();
        }
    }

    /** `prepare`, with `savedPreamble` the preamble this request saves if it pays (it holds the claim to). */
    private async prepareClaimed(slot: number, prompt: readonly number[], key: string | undefined,
        { nextTurnPrefix, loopStart }: { nextTurnPrefix: number | undefined; loopStart: number | undefined },
        savedPreamble: number | undefined, preamble: number | undefined): Promise<PreparedSlot> {
        const { store, cache } = this.options;
        const memory = this.memoryOf(slot);
        const limit = prompt.length - 1;
        if (cache !== undefined) {
            this.returns.arrived(prompt);
            const kept = this.reusablePrefix(slot, prompt, limit);
            const held = store.tokenCount(slot);
            const savedLength = this.savedLength(slot);
            const worth = worthSaving(held - savedLength, held, this.saveToPrefillRatio(), this.returns.share);
            const leaving = mostErased(kept, held);
            if (leaving) {
                const tokens = store.tokens(slot);
                // What a save of it would spare beyond the entries held already (another session's preamble, say).
                this.returns.left(tokens, Math.max(savedLength, cache.longestMatch(tokens, held, undefined)?.shared ?? 0));
            }
            // Started before anything is awaited, so that the request wanting it finds it pending.
            let saving = worth && leaving ? this.saveSlot(slot, cache, kept) : undefined;
            await this.savesServing(prompt, kept + minimumRestoreGain, saving);
            const match = cache.longestMatch(prompt, limit, key);
            const restore = match !== undefined && restoreGains(match.shared, kept) ? match.entry : undefined;
            if (restore === undefined && limit - kept >= minimumSavedTokens) cache.noteMiss(prompt, limit);
            // A restore replaces what the slot holds: save it even when the prompt shared most of it.
            if (saving === undefined && restore !== undefined && worth) saving = this.saveSlot(slot, cache, 0);
            await saving;
            if (restore !== undefined) {
                const restored = await cache.restore(restore, (file) => store.load(slot, file));
                // A failed load empties the slot; a refused entry (bad checksum) leaves it as it was.
                if (restored) memory.saved = restore;
            }
        }
        memory.key = key;
        const turnPrefix = turnPrefixOf(prompt, nextTurnPrefix);
        memory.turnPrefix = turnPrefix;
        memory.loopStart = loopStart;
        const shared = this.reusablePrefix(slot, prompt, limit);
        if (shared < store.tokenCount(slot)) await store.erase(slot, shared);
        // The store holds fewer when the KV cells could not be removed: those are evaluated again.
        const cached = Math.min(shared, store.tokenCount(slot));
        // A tool loop's turns each keep a checkpoint near their end (below), and the store keeps a
        // few: without this, a loop of a few calls pruned the one at the loop's start (and the
        // preamble's), which the user's next message needs.
        if (loopStart !== undefined && cached >= loopStart) await store.keepCheckpointsTo?.(slot, loopStart);
        let held = cached;
        if (cache !== undefined && savedPreamble !== undefined && this.preambleWanted(prompt, cached, savedPreamble, cache)) {
            held = await this.savePreamble(slot, prompt, cached, savedPreamble, cache);
        } else if (store.checkpoint !== undefined && preamble !== undefined && preamble > held && preamble < turnPrefix) {
            held = await this.evaluateTo(slot, prompt, held, preamble);
        }
        // A windowed slot is cut back exactly only where its cells or a checkpoint serve (see
        // WindowedSequence): the next turn needs one where it leaves this prompt. One taken once
        // the prompt is evaluated serves a cut that close to its end, without evaluating the prompt
        // in two batches (a second batch of a few tokens per slot: ~0.3 s a round of four on
        // maple-preview); a cut further back is evaluated to and kept as before.
        let checkpointAfterPrompt = false;
        if (store.checkpoint !== undefined && turnPrefix > held && turnPrefix <= limit) {
            if (prompt.length - turnPrefix <= checkpointReach) checkpointAfterPrompt = true;
            else held = await this.evaluateTo(slot, prompt, held, turnPrefix);
        }
        return { cached, held, checkpointAfterPrompt };
    }

    /**
     * Evaluates the prompt from `from` (what the slot holds) to `to`, keeps a checkpoint there
     * when the store takes them (the windowed sliding-window cache), and returns the prompt
     * tokens the slot then holds.
     */
    private async evaluateTo(slot: number, prompt: readonly number[], from: number, to: number): Promise<number> {
        const { store } = this.options;
        await store.evaluate(slot, prompt.slice(from, to));
        const held = Math.min(store.tokenCount(slot), sharedPrefixLength(store.tokens(slot), prompt, to));
        if (held === to) await store.checkpoint?.(slot);
        return held;
    }

    /** How many of the prompt's first `limit` tokens the slot holds and can be cut back to exactly (see SlotStore.reusable). */
    private reusablePrefix(slot: number, prompt: readonly number[], limit: number): number {
        const { store } = this.options;
        return store.reusable(slot, sharedPrefixLength(store.tokens(slot), prompt, limit));
    }

    /** Slot `slot` was given another slot's state for `prompt` (n > 1 choices share one prefill). */
    copied(slot: number, prompt: readonly number[], key: string | undefined, nextTurnPrefix: number | undefined, loopStart?: number): void {
        this.memory[slot] = { key, saved: undefined, turnPrefix: turnPrefixOf(prompt, nextTurnPrefix), loopStart };
    }

    /** At shutdown, with a disk tier (it outlives the process), saves what each slot holds unsaved, so a restart resumes it. */
    async saveForShutdown(): Promise<void> {
        const { store, cache } = this.options;
        if (cache?.disk === undefined) return;
        for (let slot = 0; slot < store.slots; slot += 1) {
            if (store.tokenCount(slot) - this.savedLength(slot) >= minimumSavedTokens) await this.saveSlot(slot, cache, 0);
        }
    }

    private cachedPrefixLength(slot: number, prompt: readonly number[]): number {
        return this.reusablePrefix(slot, prompt, prompt.length);
    }

    /** What starting `prompt` in `slot` loses, in tokens' worth (see cacheRules' reuseCost). */
    private reuseCost(slot: number, prompt: readonly number[]): number {
        const kept = Math.max(this.cachedPrefixLength(slot, prompt), this.savedLength(slot));
        return reuseCost(this.options.store.tokenCount(slot), kept, this.options.cache === undefined ? undefined : this.saveToPrefillRatio());
    }

    /** What a turn state's save is weighed by now (see worthSaving), for /metrics. */
    saveRule(): { saveToPrefillRatio: number; returnShare: number } {
        return { saveToPrefillRatio: this.saveToPrefillRatio(), returnShare: this.returns.share };
    }

    private saveToPrefillRatio(): number {
        return this.options.costs.saveToPrefillRatio(defaultSaveToPrefillRatio);
    }

    /** How many of the slot's leading tokens a saved entry still holds. */
    private savedLength(slot: number): number {
        const saved = this.memoryOf(slot).saved;
        if (saved === undefined || this.options.cache?.holds(saved) !== true) return 0;
        return sharedPrefixLength(this.options.store.tokens(slot), saved.tokens, saved.tokens.length);
    }

    /** Saves what the slot holds (see savePlan); its first `keep` tokens are all the slot's next use keeps. */
    private saveSlot(slot: number, cache: PromptCache, keep: number): Promise<void> {
        const tokens = this.options.store.tokens(slot);
        const saving: Promise<void> = this.saveSlotStates(slot, cache, keep).finally(() => this.pendingSaves.delete(saving));
        this.pendingSaves.set(saving, tokens);
        return saving;
    }

    /** Waits for the saves in progress (but `own`) that hold at least `worth` leading tokens of the prompt. */
    private async savesServing(prompt: readonly number[], worth: number, own: Promise<void> | undefined): Promise<void> {
        const serving = [...this.pendingSaves].filter(([saving, tokens]) => saving !== own && sharedPrefixLength(tokens, prompt, prompt.length - 1) >= worth);
        await Promise.all(serving.map(([saving]) => saving));
    }

    private async saveSlotStates(slot: number, cache: PromptCache, keep: number): Promise<void> {
        const { store, costs } = this.options;
        const memory = this.memoryOf(slot);
        // Inside a tool loop the conversation's state at the loop's start stays for its next user message.
        const loopStart = memory.loopStart;
        const save = (): Promise<CacheEntry | undefined> =>
            cache.save(store.tokens(slot), memory.key, async (file) => {
                const { bytes, milliseconds } = await store.save(slot, file);
                costs.noteSave(store.tokenCount(slot), milliseconds);
                return bytes;
            }, { loopStart });
        const held = store.tokenCount(slot);
        const turnStart = memory.turnPrefix ?? 0;
        const planned = savePlan(held, keep, turnStart, this.options.slidingWindow);
        // A windowed slot goes back to its turn start only where a checkpoint or its cells serve it exactly.
        const plan = planned.atTurnStart && store.reusable(slot, turnStart) !== turnStart ? { whole: true, atTurnStart: false } : planned;
        try {
            if (plan.whole) memory.saved = await save();
            if (plan.atTurnStart) {
                await store.erase(slot, turnStart);
                if (store.tokenCount(slot) === turnStart) memory.saved = await save();
            }
        } catch {
            // A save that fails (a full tmpfs) costs only the re-evaluation it would have spared.
            memory.saved = undefined;
        }
    }

    /**
     * Whether to evaluate the prompt in two pieces and save the state where its preamble ends:
     * the slot does not hold the preamble yet (it is evaluated anyway, the save is the only
     * cost), it leaves at least one prompt token to evaluate, no entry serves it whole (one entry
     * per distinct preamble), and the save pays by today's rule (worthSaving).
     */
    private preambleWanted(prompt: readonly number[], cached: number, preamble: number, cache: PromptCache): boolean {
        if (preamble >= prompt.length || preamble - cached < minimumSavedTokens) return false;
        const held = cache.longestMatch(prompt, preamble, undefined)?.shared ?? 0;
        if (held >= preamble) return false;
        return worthSaving(preamble - Math.max(held, cached), preamble, this.saveToPrefillRatio());
    }

    /**
     * Evaluates the prompt up to its preamble's end, saves that state (tagged as a preamble, no
     * conversation's), and returns the tokens the slot holds. Where the preamble parts from one
     * another session saved (see divergence), that state is saved first.
     */
    private async savePreamble(slot: number, prompt: readonly number[], cached: number, preamble: number, cache: PromptCache): Promise<number> {
        let held = cached;
        for (const end of [this.divergence(prompt, cached, preamble, cache), preamble]) {
            if (end === undefined) continue;
            held = await this.evaluateTo(slot, prompt, held, end);
            if (held !== end) return held;
            await this.savePreambleState(slot, prompt, end, cache);
        }
        return held;
    }

    /**
     * On a sliding-window model, where this preamble parts from the saved ones, when that is
     * inside it: another session's system prompt with a per-user value in it (Claude Code's
     * memory directory names the user's home and working directory). Their entries hold the
     * tokens before that point but cannot be cut back to it (see CacheTier's servesExactly), as a
     * full-attention model's can; a state there serves every later session that parts at the same
     * point. Undefined when an entry serves that point already, when it is within 32 tokens of what
     * the slot holds or of the preamble's end, or when the save does not pay (worthSaving).
     */
    private divergence(prompt: readonly number[], cached: number, preamble: number, cache: PromptCache): number | undefined {
        if (this.options.slidingWindow === 0) return undefined;
        const shared = cache.longestShared(prompt, preamble);
        if (shared - cached < minimumSavedTokens || preamble - shared < minimumSavedTokens) return undefined;
        if ((cache.longestMatch(prompt, shared, undefined)?.shared ?? 0) >= shared) return undefined;
        return worthSaving(shared - cached, shared, this.saveToPrefillRatio()) ? shared : undefined;
    }

    /** Saves the slot, which holds the prompt's first `length` tokens, as a preamble's state. */
    private async savePreambleState(slot: number, prompt: readonly number[], length: number, cache: PromptCache): Promise<void> {
        const { store, costs } = this.options;
        const entry = await cache.save(prompt.slice(0, length), undefined, async (file) => {
            const { bytes, milliseconds } = await store.save(slot, file);
            costs.noteSave(length, milliseconds);
            return bytes;
        }, { preamble: true }).catch(() => undefined);
        if (entry !== undefined) this.memoryOf(slot).saved = entry;
    }

    /**
     * For a prompt whose preamble neither its slot nor an entry holds: waits while another request
     * evaluates and saves that preamble, then claims it if still no entry holds it (one request
     * per distinct preamble saves it). Returns the claim's release, or undefined without a claim.
     * The claim is taken before this function first awaits, so requests that start together see it.
     */
    private async claimPreamble(slot: number, prompt: readonly number[], preamble: number, cache: PromptCache): Promise<(() => void) | undefined> {
        if (preamble >= prompt.length || preamble < minimumSavedTokens || this.reusablePrefix(slot, prompt, preamble) >= preamble) return undefined;
        const name = preambleKey(prompt, preamble);
        for (let saving = this.preamblesSaving.get(name); saving !== undefined; saving = this.preamblesSaving.get(name)) await saving;
        if ((cache.longestMatch(prompt, preamble, undefined)?.shared ?? 0) >= preamble) return undefined;
        let release!: () => void;
        this.preamblesSaving.set(name, new Promise<void>((resolve) => (release = resolve)));
        return () => {
            this.preamblesSaving.delete(name);
            release();
        };
    }

    private memoryOf(slot: number): SlotMemory {
        const memory = this.memory[slot];
        if (memory === undefined) throw new RangeError(`no slot ${slot}`);
        return memory;
    }
}

/** Departures after which one not back counts as gone (see ReturnOdds), with few slots. */
const minimumSettleAfter = 8;

/** A preamble's identity among those being saved: its length and tokens. */
function preambleKey(prompt: readonly number[], preamble: number): string {
    return prompt.slice(0, preamble).join(",");
}

/**
 * The prompt cache's rules and their constants, as docs/prompt-cache-design.md explains and
 * measures them. Pure functions: SlotCachePolicy applies them to the slots and the saved entries.
 */

/** A saved state is restored only when it spares at least this many more tokens than the slot's own prefix. */
export const minimumRestoreGain = 16;
/** States with fewer unsaved tokens are not worth a save (re-evaluating them is about as quick). */
export const minimumSavedTokens = 32;
/**
 * Where a conversation's next prompt leaves this one when its template does not tell:
 * llama-server's last context checkpoint, this many tokens before the end of the prompt
 * (server-context.cpp).
 */
export const turnCheckpointOffset = 4;
/**
 * Saving a token's KV state costs about this share of evaluating it again, until both were
 * measured (see StateCosts): about what qwen3-0.6b measures on 2 CPU cores.
 */
export const defaultSaveToPrefillRatio = 0.1;

/** Where a conversation's next prompt leaves this one: as its template says when known (chat requests), else `turnCheckpointOffset` before the end. */
export function turnPrefixOf(prompt: readonly number[], nextTurnPrefix: number | undefined): number {
    return nextTurnPrefix === undefined ? prompt.length - turnCheckpointOffset : Math.max(0, Math.min(nextTurnPrefix, prompt.length));
}

/**
 * Whether to save a slot holding `held` tokens, `unsaved` of them in no saved entry: when
 * evaluating those again, as often as states like it return (`returnShare`, see ReturnOdds),
 * would cost more than writing the whole state (`saveToPrefillRatio`, as measured), and they are
 * enough for a restore of the entry to be chosen over the older one.
 */
export function worthSaving(unsaved: number, held: number, saveToPrefillRatio: number, returnShare = 1): boolean {
    return unsaved >= minimumRestoreGain && unsaved * returnShare >= held * saveToPrefillRatio;
}

/**
 * As llama-server: a slot's state is saved when most of it is about to go (a new turn of the
 * same conversation keeps most of it, and erases only what it does not need).
 */
export function mostErased(kept: number, held: number): boolean {
    return kept < held / 2;
}

/** Whether a saved state sharing `shared` prompt tokens is restored rather than the prompt evaluated past the slot's own `kept`. */
export function restoreGains(shared: number, kept: number): boolean {
    return shared >= kept + minimumRestoreGain;
}

/**
 * What reusing a slot that holds `held` tokens loses, in tokens' worth, when the request keeps
 * `kept` of them (its own prefix, or what a saved entry still holds). With a prompt cache the
 * tokens are saved rather than lost when that is cheaper: the cost is then the save's, which
 * writes the whole state.
 */
export function reuseCost(held: number, kept: number, saveToPrefillRatio: number | undefined): number {
    const lost = Math.max(0, held - kept);
    return saveToPrefillRatio === undefined ? lost : Math.min(lost, held * saveToPrefillRatio);
}

/**
 * How a slot holding `held` tokens is saved, whose next use keeps its first `keep` and whose
 * conversation's next prompt leaves this one at `turnStart`. A sliding-window model's entry
 * serves only prompts that keep all but at most its last token (see CacheTier), and a chat's next
 * turn renders the reply otherwise than it was generated: so such a slot is saved cut back to
 * `turnStart` (`atTurnStart`), and whole first only when enough was generated after that point to
 * be worth a second save (`whole`).
 */
export function savePlan(held: number, keep: number, turnStart: number, slidingWindow: number): { whole: boolean; atTurnStart: boolean } {
    const atTurnStart = slidingWindow > 0 && held > slidingWindow && turnStart >= minimumSavedTokens && turnStart >= keep && turnStart < held - 1;
    return { atTurnStart, whole: !atTurnStart || held - turnStart > minimumRestoreGain };
}

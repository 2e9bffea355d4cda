/**
 * The context each slot gets (issue 29): the model's training context when the slots' KV caches
 * fit in the memory the weights and the host-memory prompt cache leave, else the largest that
 * fits; an explicit size is obeyed, or refused when it cannot fit. KV bytes come from the GGUF
 * (kvCacheBytes), with the sliding-window cache in use: on maple-preview the windowed cache lets
 * its whole 131,072-token context fit where the full cache would need four times the memory.
 */
export interface ContextFit {
    contextSize: number;
    /** Why this size, for the start-up log. */
    reason: string;
}

export interface ContextFitOptions {
    /** The size asked for (`--context-size`), or undefined: choose. */
    requested: number | undefined;
    trainContextSize: number;
    slots: number;
    /** Bytes the slots' KV caches may take (memory less the weights, the RAM prompt cache and a reserve); undefined: not bounded. */
    budgetBytes: number | undefined;
    /** One slot's KV bytes at a context size. */
    kvBytesPerSlot: (contextSize: number) => number;
}

/** Sizes chosen are multiples of this (llama.cpp pads a slot's cells to 256). */
const granularity = 1024;
/** Below this a chosen context is too small to serve a chat: refuse instead. */
const smallestChosen = 2048;

export class ContextDoesNotFitError extends Error {}

export function fitContextSize(options: ContextFitOptions): ContextFit {
    const { trainContextSize, slots, budgetBytes, kvBytesPerSlot } = options;
    const total = (size: number): number => slots * kvBytesPerSlot(size);
    const gib = (bytes: number): string => `${(bytes / 2 ** 30).toFixed(2)} GiB`;
    if (options.requested !== undefined) {
        const size = trainContextSize > 0 ? Math.min(options.requested, trainContextSize) : options.requested;
        if (budgetBytes !== undefined && total(size) > budgetBytes) {
            throw new ContextDoesNotFitError(`--context-size ${options.requested} needs ${gib(total(size))} of KV cache for ${slots} slots, but only ${gib(budgetBytes)} `
                + "is left next to the weights and the RAM prompt cache: lower MAPLE_CONTEXT_SIZE, MAPLE_PARALLEL or MAPLE_CACHE_RAM, or leave the context size unset to have it chosen");
        }
        return { contextSize: size, reason: size < options.requested ? `--context-size ${options.requested}, capped at the model's training context` : "--context-size" };
    }
    const train = trainContextSize > 0 ? trainContextSize : 32_768;
    if (budgetBytes === undefined || total(train) <= budgetBytes) {
        return { contextSize: train, reason: `the model's training context (${gib(total(train))} of KV cache for ${slots} slots${budgetBytes === undefined ? "" : `, ${gib(budgetBytes)} available`})` };
    }
    let size = Math.floor(train / granularity) * granularity;
    while (size >= smallestChosen && total(size) > budgetBytes) size -= granularity;
    if (size < smallestChosen) {
        throw new ContextDoesNotFitError(`Not even a ${smallestChosen}-token context fits ${slots} slots in the ${gib(budgetBytes)} left next to the weights and the RAM prompt cache: `
            + "lower MAPLE_PARALLEL or MAPLE_CACHE_RAM");
    }
    return { contextSize: size, reason: `the largest that fits: ${gib(total(size))} of KV cache for ${slots} slots in the ${gib(budgetBytes)} left next to the weights and the RAM prompt cache (the training context is ${train})` };
}

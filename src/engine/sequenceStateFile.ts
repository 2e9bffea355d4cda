import type { LlamaContextSequence } from "node-llama-cpp";

/**
 * Writes a sequence's KV state and token list to `file` (llama.cpp's `llama_state_seq_save_file`
 * through node-llama-cpp 3.22.1's `saveStateToFile`, the only sequence-state API it offers: there
 * is no in-memory `llama_state_seq_get_data`). Needs the context lock: run it inside
 * `StepBarrier.exclusive`. Returns the file's size in bytes.
 */
export async function saveSequenceState(sequence: LlamaContextSequence, file: string): Promise<number> {
    const { fileSize } = await sequence.saveStateToFile(file);
    return fileSize;
}

/**
 * Loads a state written by `saveSequenceState` into `sequence`, replacing what it held, and
 * returns the tokens it now holds. llama.cpp's loader trusts the file: a state from another model
 * or context layout can crash the process (node-llama-cpp makes the caller "accept the risk").
 * So the caller loads only entries keyed by this model's identity whose bytes it wrote or
 * checked (see promptCache/). On any failure the sequence is emptied and the error rethrown.
 * Needs the context lock, as `saveSequenceState`.
 */
export async function loadSequenceState(sequence: LlamaContextSequence, file: string): Promise<readonly number[]> {
    try {
        await sequence.loadStateFromFile(file, { acceptRisk: true });
        return sequence.contextTokens;
    } catch (error) {
        await sequence.clearHistory();
        throw error;
    }
}

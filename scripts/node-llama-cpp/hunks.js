// Applies text hunks to a source file's text, each checked to match exactly once: a pinned
// dependency patched by hand must fail loudly, not half-apply, when its source moves.
/**
 * @param {string} source the file's text
 * @param {{ original: string, patched: string }[]} hunks
 * @param {string} label the file, for the error
 * @returns {string}
 */
export function applyHunks(source, hunks, label) {
    let result = source;
    for (const { original, patched } of hunks) {
        const at = result.indexOf(original);
        if (at < 0 || result.indexOf(original, at + 1) >= 0) {
            throw new Error(`${label}: the code to patch is not there exactly once (${JSON.stringify(original.trim().split("\n")[0])}); is node-llama-cpp still 3.22.1?`);
        }
        result = result.slice(0, at) + patched + result.slice(at + original.length);
    }
    return result;
}

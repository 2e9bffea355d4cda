export { newId } from "../wire/ids.js";

/** OpenAI's `created`: Unix seconds. */
export function unixSeconds(): number {
    return Math.floor(Date.now() / 1000);
}

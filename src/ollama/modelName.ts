/** Ollama's default tag: `llama3.2` and `llama3.2:latest` name the same model. */
const defaultTag = ":latest";

/**
 * The model an Ollama request names, as the served id would be written: Ollama clients send the
 * name `/api/tags` listed (`maple-preview:latest`), the bare name, or the served id itself; all
 * three are the served model. Any other name is passed on as it is, for MAPLE_STRICT_MODEL to judge.
 */
export function servedModelName(requested: string, servedId: string): string {
    return requested === servedId || requested === `${servedId}${defaultTag}` ? servedId : requested;
}

/** How `/api/tags` and `/api/ps` name the served model: with Ollama's `:latest` tag unless its id has a tag already. */
export function listedModelName(servedId: string): string {
    return servedId.includes(":") ? servedId : `${servedId}${defaultTag}`;
}

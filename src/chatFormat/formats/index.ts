import type { ChatFormat } from "./chatFormat.js";
import { detectChatFormat } from "./detect.js";
import { deepSeekR1Format, deepSeekV31Format } from "./deepseek.js";
import { genericFormat } from "./generic.js";
import { glmFormat } from "./glm.js";
import { harmonyFormat } from "./harmony.js";
import { hermesFormat } from "./hermes.js";
import { llama3Format } from "./llama3.js";
import { mistralFormat, mistralNemoFormat } from "./mistral.js";
import { qwen3CoderFormat } from "./qwen3Coder.js";
import type { ChatFormatName, ChatFormatSetting } from "./names.js";

export type { ChatFormat, OutputParser, OutputParserOptions, PromptStart } from "./chatFormat.js";
export { chatFormatNames, type ChatFormatName, type ChatFormatSetting } from "./names.js";

/** Every chat format Maple knows, by name. */
export const chatFormats: Readonly<Record<ChatFormatName, ChatFormat>> = {
    hermes: hermesFormat,
    harmony: harmonyFormat,
    "qwen3-coder": qwen3CoderFormat,
    llama3: llama3Format,
    mistral: mistralFormat,
    "mistral-nemo": mistralNemoFormat,
    "deepseek-r1": deepSeekR1Format,
    "deepseek-v3.1": deepSeekV31Format,
    "glm4.5": glmFormat,
    generic: genericFormat
};

/** The chat format a model is served with, and why (for the start-up log). */
export interface ChosenChatFormat {
    format: ChatFormat;
    reason: string;
}

/**
 * The format of a model whose chat template is `template`: the one `--chat-format` names, else
 * the one detected from the template (`generic` for one that does not show tools), else
 * Hermes/Qwen3 (what Maple read for every model before it knew other families: `<think>` and
 * `<tool_call>` blocks, the ChatML fallback's own syntax).
 */
export function chooseChatFormat(setting: ChatFormatSetting, template: string): ChosenChatFormat {
    if (setting !== "auto") return { format: chatFormats[setting], reason: "--chat-format" };
    const detected = detectChatFormat(template);
    if (detected !== undefined) return { format: chatFormats[detected.format], reason: `detected: the chat template ${detected.because}` };
    return { format: hermesFormat, reason: "not recognised from the chat template (which shows the tools): Hermes/Qwen3, the default" };
}

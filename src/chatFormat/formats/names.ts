/**
 * The chat formats Maple knows, by the name `--chat-format` takes and `/health` reports (kept
 * apart from the formats themselves so the settings table can list them without loading them).
 */
export const chatFormatNames = ["hermes", "harmony", "qwen3-coder", "llama3", "mistral", "mistral-nemo", "deepseek-r1", "deepseek-v3.1", "glm4.5", "generic"] as const;

export type ChatFormatName = (typeof chatFormatNames)[number];

/** `--chat-format`: a format by name, or `auto` (detected from the model's chat template). */
export type ChatFormatSetting = ChatFormatName | "auto";

import { settings, type SettingDefinition } from "../config/settings.js";

/** `maple serve --help`, generated from the settings table so it cannot drift from it. */
export function serveHelp(): string {
    const lines = [
        "Usage: maple serve [options]",
        "",
        "Serves a GGUF model over an OpenAI-compatible API (/v1/chat/completions, /v1/completions,",
        "/v1/models, /tokenize, /detokenize, /metrics, /health). Every option can also be set by its",
        "MAPLE_* environment variable; a flag wins over its variable.",
        "",
        "Options:"
    ];
    for (const setting of settings as readonly SettingDefinition[]) {
        const defaultValue = setting.defaultText ?? String(setting.defaultValue());
        lines.push(`  --${setting.flag} ${setting.valueName}`.padEnd(34) + setting.help);
        lines.push(" ".repeat(34) + `[${setting.env}] default: ${defaultValue}`);
    }
    lines.push("  -h, --help".padEnd(34) + "Show this help");
    lines.push("", "Model specs:",
        "  ./model.gguf                         a local GGUF file",
        "  hf:owner/repo/file.gguf              a Hugging Face file, downloaded once (HF_TOKEN for private repos)",
        "  hf:owner/repo:Q4_K_M                 the file of that quantization in a Hugging Face repo",
        "  synthetic:maple-tiny                 random weights in a real architecture, written once (for tests):",
        "                                       maple-tiny, qwen3-tiny, maple-preview, qwen3-0.6b");
    return lines.join("\n");
}

export function mainHelp(version: string): string {
    return [
        `maple ${version}: an OpenAI-compatible inference server for local reasoning models`,
        "",
        "Usage:",
        "  maple serve [options]    start the server (maple serve --help for every option)",
        "  maple --version          print the version",
        "  maple --help             show this help"
    ].join("\n");
}

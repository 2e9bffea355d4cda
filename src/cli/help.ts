import { isSwitch, settings, type SettingDefinition } from "../config/settings.js";

/** `maple serve --help`, generated from the settings table so it cannot drift from it. */
export function serveHelp(): string {
    const lines = [
        "Usage: maple serve [options]",
        "",
        "Serves a GGUF model over an OpenAI-compatible API (/v1/chat/completions, /v1/completions,",
        "/v1/models, /tokenize, /detokenize, /metrics, /health). Every option can also be set by its",
        "MAPLE_* environment variable; a flag wins over its variable. A boolean option, shown as",
        "--[no-]NAME, is on as --NAME alone and off as --no-NAME; --NAME WORD and --NAME=WORD take",
        "true/false, 1/0, yes/no or on/off, as its variable does.",
        "",
        "Options:"
    ];
    for (const setting of settings as readonly SettingDefinition[]) {
        const defaultValue = setting.defaultText ?? String(setting.defaultValue());
        const usage = isSwitch(setting) ? `--[no-]${setting.flag}` : `--${setting.flag} ${setting.valueName}`;
        // At least one space between the usage and its help, when the usage is as wide as the column (--gpu auto|cuda|vulkan|metal|cpu).
        lines.push(`  ${usage}`.padEnd(33) + " " + setting.help);
        lines.push(" ".repeat(34) + `[${setting.env}] default: ${defaultValue}`);
    }
    lines.push("  -h, --help".padEnd(34) + "Show this help");
    lines.push("", modelSpecsHelp);
    return lines.join("\n");
}

const modelSpecsHelp = [
    "Model specs:",
    "  maple-preview                        deepgrove's maple-preview, official TQ2_0 file (= maple-preview:tq2; the default)",
    "  maple-preview:tq1                    the official TQ1_0 file (smaller, slower kernels)",
    "  ./model.gguf                         a local GGUF file (./maple-preview for a file of that name)",
    "  hf:owner/repo/file.gguf              a Hugging Face file, downloaded once (HF_TOKEN for private repos)",
    "  hf:owner/repo:Q4_K_M                 the file of that quantization in a Hugging Face repo",
    "  synthetic:maple-tiny                 random weights in a real architecture, written once (for tests):",
    "                                       maple-tiny, qwen3-tiny, maple-preview, qwen3-0.6b"
].join("\n");

const modelsDirHelp = [
    "  --models-dir DIR                 Where downloaded and synthetic models are kept",
    "                                   [MAPLE_MODELS_DIR] default: $XDG_CACHE_HOME/maple/models or ~/.cache/maple/models",
    "  -h, --help                       Show this help"
].join("\n");

export function pullHelp(): string {
    return [
        "Usage: maple pull [options] MODEL",
        "",
        "Downloads MODEL into the models directory (or writes a synthetic one) and exits; 'maple serve'",
        "then starts without waiting for it. A progress bar shows the transfer; an interrupted pull",
        "(Ctrl-C, a lost connection) keeps what it fetched, and the next pull resumes it. The file must",
        "have the size the hub announces; maple-preview's official files also their published size,",
        "and the TQ2_0 file its sha256, checked once after the download. A file that fails a check is",
        "deleted and the pull exits 1; so do a missing file (404) and a refused one (401/403).",
        "",
        "Options:",
        modelsDirHelp,
        "",
        modelSpecsHelp
    ].join("\n");
}

export function modelsHelp(): string {
    return [
        "Usage: maple models [options]",
        "",
        "Lists the models directory: each model's spec (or short name), size, kind (huggingface or",
        "synthetic), status and file. Status: complete (ready to serve), partial (an interrupted download",
        "that 'maple pull' resumes, or a write in progress), unverified (an official file whose sha256",
        "has not been checked yet; the next pull or serve checks it), outdated (an older synthetic",
        "version, replaced on next use).",
        "",
        "Options:",
        "  --json                           Print the list as JSON",
        modelsDirHelp
    ].join("\n");
}

export function rmHelp(): string {
    return [
        "Usage: maple rm [options] MODEL...",
        "",
        "Deletes models from the models directory: by spec or short name (maple-preview:tq1,",
        "hf:owner/repo/file.gguf, synthetic:NAME, every version) or by the file name 'maple models'",
        "shows. A partial download of it goes too. Exits 1 when a MODEL is not there.",
        "",
        "Options:",
        modelsDirHelp
    ].join("\n");
}

export function mainHelp(version: string): string {
    return [
        `maple ${version}: an OpenAI-compatible inference server for local reasoning models`,
        "",
        "Usage:",
        "  maple serve [options]    start the server (maple serve --help for every option)",
        "  maple pull MODEL         download a model (maple-preview by default when serving) and exit",
        "  maple models             list the models directory (alias: maple ls)",
        "  maple rm MODEL...        delete models from it",
        "  maple --version          print the version",
        "  maple --help             show this help",
        "",
        "Every command takes --help."
    ].join("\n");
}

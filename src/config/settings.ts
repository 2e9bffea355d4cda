import { availableParallelism, homedir } from "node:os";
import { chatFormatNames, type ChatFormatSetting } from "../chatFormat/formats/names.js";
import { processMemory } from "../processMemory.js";
import { join } from "node:path";

/**
 * Every Maple setting in one table: its CLI flag, its `MAPLE_*` variable, its default, how it is
 * parsed and validated, and the `--help` line that documents it. A flag wins over its variable.
 */
export interface MapleConfig {
    /** The default model's spec; a comma list (repeated --model flags) serves several, the first the default. */
    model: string | undefined;
    /** More models to serve after --model (MAPLE_MODELS, a comma list of [NAME=]SPEC). */
    models: string | undefined;
    /** Models of the models directory load when a request names them. */
    loadOnDemand: boolean;
    maxLoadedModels: number;
    /** Bound on the loaded models' weights + KV, MiB; undefined: none. */
    maxModelMemoryMiB: number | undefined;
    /** An idle model unloads after this; negative: never. */
    keepAliveSeconds: number;
    /** The default model is never unloaded (by the keep-alive or to make room). */
    pinDefaultModel: boolean;
    host: string;
    port: number;
    /** A second port serving the same routes (Ollama clients' default is 11434); undefined: none. */
    ollamaPort: number | undefined;
    modelId: string;
    modelsDir: string;
    apiKey: string | undefined;
    /** Serve GET /metrics without the API key (default false: behind the key when one is set). */
    metricsPublic: boolean;
    corsOrigins: string[] | undefined;
    strictModel: boolean;
    temperature: number;
    maxNewTokens: number;
    maxNewTokensLimit: number;
    maxPromptTokens: number | undefined;
    /** Each slot's context in tokens; undefined: the model's training context when it fits, else the largest that fits (see fitContextSize). */
    contextSize: number | undefined;
    threads: number;
    parallel: number;
    batchSize: number;
    queueTimeoutSeconds: number;
    /** How long a stream's write may wait for the client to read before the stream is cut and its slot freed; 0: for ever. */
    writeTimeoutSeconds: number;
    maxQueueDepth: number;
    maxBodyBytes: number;
    chatTemplateFile: string | undefined;
    /** The default model's chat format (how it writes reasoning and tool calls); `auto`: detected from its chat template. */
    chatFormat: ChatFormatSetting;
    weightVersion: string;
    shutdownGraceSeconds: number;
    /** On SIGTERM, how long /health answers 503 while requests are still accepted, before the server stops accepting. */
    drainSeconds: number;
    /** Sent as the `x-maple-replica` response header (none when unset). */
    replicaId: string | undefined;
    /** Stored /v1/responses responses kept at most (the oldest go first). */
    responsesStoreMaxCount: number;
    /** Bytes of stored /v1/responses responses kept at most (their JSON size; the oldest go first). */
    responsesStoreMaxBytes: number;
    /** Seconds a stored /v1/responses response is kept after it was created. */
    responsesStoreTtlSeconds: number;
    /** Where stored responses live: `memory` (this process) or a `redis://` / `rediss://` URL every replica shares. */
    responsesStore: string;
    logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
    logPrompts: boolean;
    /** Prompt cache in host memory, MiB; undefined: chosen from the machine's memory and the model (defaultCacheRamMiB). */
    cacheRamMiB: number | undefined;
    cacheDir: string | undefined;
    cacheDiskMiB: number;
    /** Sliding-window layers keep every token (the full cache) instead of their window and checkpoints. */
    swaFull: boolean;
    /** How the weights reach llama.cpp: copied into RAM (huge pages), mapped, or chosen (src/engine/weightsLoad.ts). */
    weights: "auto" | "ram" | "mmap";
    /** llama.cpp's backend; "auto": the first GPU backend with a device and kernels for the model's weight types, else the CPU (src/engine/backendChoice.ts). */
    gpu: "auto" | "cuda" | "vulkan" | "metal" | "cpu";
    /** Layers offloaded to the GPU: "auto" what fits the free VRAM, "max" all (refused when they do not fit), or a count. */
    gpuLayers: "auto" | "max" | number;
    /** Keep Claude Code's attribution system block (src/anthropic/attributionBlocks.ts) in the prompt. */
    keepBillingHeader: boolean;
    /** Serve the built-in web chat at / (default true). */
    webUi: boolean;
}

type Parser<T> = (raw: string) => T;

export interface SettingDefinition<K extends keyof MapleConfig = keyof MapleConfig> {
    key: K;
    flag: string;
    env: string;
    /** Shown in --help after the flag; not for a boolean setting, a switch shown as `--[no-]FLAG` (see isSwitch). */
    valueName: string;
    help: string;
    defaultValue: () => MapleConfig[K];
    /** How the default reads in --help, when the value itself is computed. */
    defaultText?: string;
    parse: Parser<MapleConfig[K]>;
}

/** Thrown for an invalid setting; the CLI prints its message as one line and exits 2. */
export class ConfigError extends Error {
    constructor(message: string) {
        super(message);
        this.name = "ConfigError";
    }
}

function integer(min: number, max = Number.MAX_SAFE_INTEGER): Parser<number> {
    return (raw) => {
        if (!/^[+-]?\d+$/.test(raw.trim())) throw new Error(`must be a whole number, got "${raw}"`);
        const value = Number(raw);
        if (value < min || value > max) throw new Error(`must be between ${min} and ${max}, got ${value}`);
        return value;
    };
}

function decimal(min: number, max: number): Parser<number> {
    return (raw) => {
        const value = Number(raw);
        if (raw.trim() === "" || !Number.isFinite(value)) throw new Error(`must be a number, got "${raw}"`);
        if (value < min || value > max) throw new Error(`must be between ${min} and ${max}, got ${value}`);
        return value;
    };
}

const booleanWords: Record<string, boolean> = { true: true, 1: true, yes: true, on: true, false: false, 0: false, no: false, off: false };
const boolean: Parser<boolean> = (raw) => {
    const value = booleanWords[raw.trim().toLowerCase()];
    if (value === undefined) throw new Error(`must be true or false, got "${raw}"`);
    return value;
};

/** A word a boolean setting takes: true/false, 1/0, yes/no, on/off, in any case. */
export function isBooleanWord(raw: string): boolean {
    return Object.hasOwn(booleanWords, raw.trim().toLowerCase());
}

/**
 * A boolean setting: its flag is a switch (`--swa-full` alone is true, `--no-swa-full` false) that
 * also takes a boolean word (`--webui false`), as llama-server's and vLLM's boolean flags do.
 */
export function isSwitch(setting: SettingDefinition): boolean {
    return setting.parse === (boolean as Parser<unknown>);
}

function nonEmpty(raw: string): string {
    if (raw.trim() === "") throw new Error("must not be empty");
    return raw;
}

function oneOf<T extends string>(values: readonly T[]): Parser<T> {
    return (raw) => {
        if (!(values as readonly string[]).includes(raw)) throw new Error(`must be one of ${values.join(", ")}, got "${raw}"`);
        return raw as T;
    };
}

/** `memory`, or a Redis URL (its credentials stay out of error messages). */
function responsesStore(raw: string): string {
    const value = raw.trim();
    if (value === "memory") return value;
    let url: URL;
    try {
        url = new URL(value);
    } catch {
        throw new Error("must be memory or a redis:// or rediss:// URL");
    }
    if (url.protocol !== "redis:" && url.protocol !== "rediss:") throw new Error(`must be memory or a redis:// or rediss:// URL, got a ${url.protocol} URL`);
    return value;
}

/** --gpu-layers: auto, max or a count of layers (node-llama-cpp's gpuLayers). */
function gpuLayers(raw: string): "auto" | "max" | number {
    const value = raw.trim();
    if (value === "auto" || value === "max") return value;
    try {
        return integer(0, 100_000)(value);
    } catch {
        throw new Error(`must be auto, max or a number of layers, got "${raw}"`);
    }
}

function corsOrigins(raw: string): string[] {
    const origins = raw.split(",").map((origin) => origin.trim()).filter((origin) => origin !== "");
    if (origins.length === 0) throw new Error("must name at least one origin, or *");
    for (const origin of origins) {
        if (origin !== "*" && !/^https?:\/\/[^/\s]+$/.test(origin)) throw new Error(`must be origins like https://app.example.com or *, got "${origin}"`);
    }
    return origins;
}

function defaultModelsDir(): string {
    const cacheHome = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
    return join(cacheHome, "maple", "models");
}

/** llama-server's --cache-ram default: the most the automatic choice takes. */
const maxDefaultCacheRamMiB = 8192;

/**
 * MAPLE_CACHE_RAM's default: a quarter of the memory the model's weights leave, at most 8 GiB
 * (llama-server's default), so a big model on a small machine gets a small cache.
 */
export function defaultCacheRamMiB(totalMemoryBytes: number, modelFileBytes: number): number {
    return Math.min(maxDefaultCacheRamMiB, Math.max(0, Math.floor((totalMemoryBytes - modelFileBytes) / 4 / (1 << 20))));
}

function define<K extends keyof MapleConfig>(definition: SettingDefinition<K>): SettingDefinition<K> {
    return definition;
}

export const settings = [
    define({ key: "model", flag: "model", env: "MAPLE_MODEL", valueName: "SPEC", defaultValue: () => undefined,
        defaultText: "maple-preview (its official TQ2_0 file), or synthetic:maple-tiny when the hub is unreachable",
        help: "Model to serve: maple-preview[:tq1], a .gguf path, an hf: reference (downloaded once), or synthetic:NAME; "
            + "repeat it (or use MAPLE_MODELS) to serve several, NAME=SPEC to name one (docs/models.md)", parse: nonEmpty }),
    define({ key: "models", flag: "models", env: "MAPLE_MODELS", valueName: "LIST", defaultValue: () => undefined,
        defaultText: "none", help: "More models to serve, comma-separated [NAME=]SPEC (after --model; the first served is the default)", parse: nonEmpty }),
    define({ key: "loadOnDemand", flag: "load-on-demand", env: "MAPLE_LOAD_ON_DEMAND", valueName: "BOOL", defaultValue: () => false,
        help: "Load a model of the models directory (maple models) when a request names it", parse: boolean }),
    define({ key: "maxLoadedModels", flag: "max-loaded-models", env: "MAPLE_MAX_LOADED_MODELS", valueName: "N", defaultValue: () => 3,
        help: "Models loaded at once; the least recently used idle one unloads to make room", parse: integer(1, 64) }),
    define({ key: "maxModelMemoryMiB", flag: "max-model-memory", env: "MAPLE_MAX_MODEL_MEMORY", valueName: "MIB", defaultValue: () => undefined,
        defaultText: "no bound", help: "Memory of the loaded models (weights + KV cache as allocated; counted from the GGUF before loading); idle ones unload to make room", parse: integer(1, 1 << 30) }),
    define({ key: "keepAliveSeconds", flag: "keep-alive", env: "MAPLE_KEEP_ALIVE", valueName: "SECONDS", defaultValue: () => 300,
        help: "An idle model unloads after this (as Ollama's keep_alive); -1 keeps models loaded", parse: decimal(-1, 1e9) }),
    define({ key: "pinDefaultModel", flag: "pin-default-model", env: "MAPLE_PIN_DEFAULT_MODEL", valueName: "BOOL", defaultValue: () => true,
        help: "Never unload the default (first) model", parse: boolean }),
    define({ key: "host", flag: "host", env: "MAPLE_HOST", valueName: "HOST", defaultValue: () => "127.0.0.1",
        help: "Address to listen on (0.0.0.0 for every interface)", parse: nonEmpty }),
    define({ key: "port", flag: "port", env: "MAPLE_PORT", valueName: "PORT", defaultValue: () => 8080,
        help: "Port to listen on (0 picks a free port)", parse: integer(0, 65535) }),
    define({ key: "ollamaPort", flag: "ollama-port", env: "MAPLE_OLLAMA_PORT", valueName: "PORT", defaultValue: () => undefined,
        defaultText: "none", help: "Also listen on this port (Ollama's default is 11434), same host and routes, so Ollama clients find Maple at their default URL",
        parse: integer(0, 65535) }),
    define({ key: "modelId", flag: "model-id", env: "MAPLE_MODEL_ID", valueName: "ID", defaultValue: () => "maple-preview",
        help: "Model id reported by /v1/models and echoed when a request names none", parse: nonEmpty }),
    define({ key: "modelsDir", flag: "models-dir", env: "MAPLE_MODELS_DIR", valueName: "DIR", defaultValue: defaultModelsDir,
        defaultText: "$XDG_CACHE_HOME/maple/models or ~/.cache/maple/models",
        help: "Where downloaded and synthetic models are kept", parse: nonEmpty }),
    define({ key: "apiKey", flag: "api-key", env: "MAPLE_API_KEY", valueName: "KEY", defaultValue: () => undefined,
        defaultText: "none (open)", help: "Require 'Authorization: Bearer KEY' or 'X-Api-Key: KEY' on every route but /health", parse: nonEmpty }),
    define({ key: "corsOrigins", flag: "cors-origin", env: "MAPLE_CORS_ORIGIN", valueName: "ORIGINS", defaultValue: () => undefined,
        defaultText: "none (CORS off)", help: "Browser origins allowed to call the API, comma-separated, or * for any", parse: corsOrigins }),
    define({ key: "metricsPublic", flag: "metrics-public", env: "MAPLE_METRICS_PUBLIC", valueName: "BOOL", defaultValue: () => false,
        help: "Serve /metrics without the API key (for a Prometheus scraper)", parse: boolean }),
    define({ key: "strictModel", flag: "strict-model", env: "MAPLE_STRICT_MODEL", valueName: "BOOL", defaultValue: () => false,
        help: "Answer 404 when a request names a model other than the served id", parse: boolean }),
    define({ key: "temperature", flag: "temperature", env: "MAPLE_TEMPERATURE", valueName: "T", defaultValue: () => 0.6,
        help: "Default sampling temperature (0 is greedy)", parse: decimal(0, 2) }),
    define({ key: "maxNewTokens", flag: "max-new-tokens", env: "MAPLE_MAX_NEW_TOKENS", valueName: "N", defaultValue: () => 4096,
        help: "Default max_tokens when a request sets none", parse: integer(1) }),
    define({ key: "maxNewTokensLimit", flag: "max-new-tokens-limit", env: "MAPLE_MAX_NEW_TOKENS_LIMIT", valueName: "N", defaultValue: () => 32768,
        help: "Cap on max_tokens; larger requests are capped, not refused", parse: integer(1) }),
    define({ key: "maxPromptTokens", flag: "max-prompt-tokens", env: "MAPLE_MAX_PROMPT_TOKENS", valueName: "N", defaultValue: () => undefined,
        defaultText: "the context size", help: "Longest prompt accepted; longer → 400 context_length_exceeded", parse: integer(1) }),
    define({ key: "contextSize", flag: "context-size", env: "MAPLE_CONTEXT_SIZE", valueName: "N", defaultValue: () => undefined,
        defaultText: "the model's training context when the slots' KV caches fit next to the weights and the RAM prompt cache, else the largest that fits",
        help: "Context window of each slot in tokens (capped at the model's training context; refused when its KV cache cannot fit); "
            + "the start-up log says the size, the KV bytes a slot and why (maple-preview, windowed cache: ~12 KiB a token, ~1.5 GiB a 131072-token slot)",
        parse: integer(64, 1 << 22) }),
    define({ key: "threads", flag: "threads", env: "MAPLE_THREADS", valueName: "N", defaultValue: () => availableParallelism(),
        defaultText: "the cores this process may use", help: "llama.cpp threads; more than the cores oversubscribes and slows decoding", parse: integer(1, 1024) }),
    define({ key: "parallel", flag: "parallel", env: "MAPLE_PARALLEL", valueName: "N", defaultValue: () => 4,
        help: "Sequences generated at once (slots in one llama.cpp context)", parse: integer(1, 64) }),
    define({ key: "batchSize", flag: "batch-size", env: "MAPLE_BATCH_SIZE", valueName: "N", defaultValue: () => 512,
        help: "Tokens per llama.cpp decode batch (prompt processing chunk)", parse: integer(16, 8192) }),
    define({ key: "queueTimeoutSeconds", flag: "queue-timeout", env: "MAPLE_QUEUE_TIMEOUT", valueName: "SECONDS", defaultValue: () => 300,
        help: "How long a request may wait for a slot before 503 engine_overloaded", parse: decimal(0, 86400) }),
    define({ key: "writeTimeoutSeconds", flag: "write-timeout", env: "MAPLE_WRITE_TIMEOUT", valueName: "SECONDS", defaultValue: () => 60,
        help: "How long a streamed response may wait for a client that stopped reading before it is cut and its slot freed (0: no limit)",
        parse: decimal(0, 86400) }),
    define({ key: "maxQueueDepth", flag: "max-queue-depth", env: "MAPLE_MAX_QUEUE_DEPTH", valueName: "N", defaultValue: () => 32,
        help: "Waiting requests beyond this get 503 engine_overloaded with Retry-After", parse: integer(0, 100000) }),
    define({ key: "maxBodyBytes", flag: "max-body-bytes", env: "MAPLE_MAX_BODY_BYTES", valueName: "BYTES", defaultValue: () => 16 * 1024 * 1024,
        help: "Largest request body accepted; larger → 413", parse: integer(1024, 1 << 30) }),
    define({ key: "chatTemplateFile", flag: "chat-template", env: "MAPLE_CHAT_TEMPLATE", valueName: "FILE", defaultValue: () => undefined,
        defaultText: "the model's own (GGUF tokenizer.chat_template), else ChatML", help: "Jinja chat template file to use instead of the model's", parse: nonEmpty }),
    define({ key: "chatFormat", flag: "chat-format", env: "MAPLE_CHAT_FORMAT", valueName: "auto|NAME", defaultValue: () => "auto" as const,
        defaultText: "auto", help: `The default model's reasoning and tool-call format: auto (detected from its chat template) or one of ${chatFormatNames.join(", ")} (docs/models.md)`,
        parse: oneOf<ChatFormatSetting>(["auto", ...chatFormatNames]) }),
    define({ key: "weightVersion", flag: "weight-version", env: "MAPLE_WEIGHT_VERSION", valueName: "NAME", defaultValue: () => "default",
        help: "Reported as metadata.weight_version in chat responses", parse: nonEmpty }),
    define({ key: "shutdownGraceSeconds", flag: "shutdown-grace", env: "MAPLE_SHUTDOWN_GRACE", valueName: "SECONDS", defaultValue: () => 30,
        help: "On SIGTERM/SIGINT, how long in-flight requests may finish before they are cancelled", parse: decimal(0, 3600) }),
    define({ key: "drainSeconds", flag: "shutdown-drain", env: "MAPLE_SHUTDOWN_DRAIN", valueName: "SECONDS", defaultValue: () => 5,
        help: "On SIGTERM, how long /health answers 503 while requests are still served, so a balancer stops sending before Maple stops accepting (SIGINT skips it)",
        parse: decimal(0, 3600) }),
    define({ key: "replicaId", flag: "replica-id", env: "MAPLE_REPLICA_ID", valueName: "NAME", defaultValue: () => undefined,
        defaultText: "none (no header)", help: "Sent as the x-maple-replica response header, so responses through a balancer show which replica answered",
        parse: nonEmpty }),
    define({ key: "responsesStoreMaxCount", flag: "responses-store-max", env: "MAPLE_RESPONSES_STORE_MAX", valueName: "N", defaultValue: () => 1000,
        help: "Stored /v1/responses responses kept in memory (store: true); the oldest are dropped beyond this, 0 stores none", parse: integer(0, 1_000_000) }),
    define({ key: "responsesStoreMaxBytes", flag: "responses-store-bytes", env: "MAPLE_RESPONSES_STORE_BYTES", valueName: "BYTES", defaultValue: () => 64 * 1024 * 1024,
        help: "Memory for stored responses (their JSON size); the oldest are dropped beyond this", parse: integer(0, 1 << 40) }),
    define({ key: "responsesStoreTtlSeconds", flag: "responses-store-ttl", env: "MAPLE_RESPONSES_STORE_TTL", valueName: "SECONDS", defaultValue: () => 3600,
        help: "How long a stored response can be read or continued (previous_response_id) before it expires", parse: decimal(1, 30 * 86400) }),
    define({ key: "responsesStore", flag: "responses-store", env: "MAPLE_RESPONSES_STORE", valueName: "memory|URL", defaultValue: () => "memory",
        help: "Where stored responses live: memory (this replica, lost on restart) or a redis:// or rediss:// URL (Redis >= 6 or Valkey) shared by every replica; the limits above then apply to the whole fleet",
        parse: responsesStore }),
    define({ key: "logLevel", flag: "log-level", env: "MAPLE_LOG_LEVEL", valueName: "LEVEL", defaultValue: () => "info" as const,
        help: "fatal, error, warn, info, debug, trace or silent", parse: oneOf<MapleConfig["logLevel"]>(["fatal", "error", "warn", "info", "debug", "trace", "silent"]) }),
    define({ key: "logPrompts", flag: "log-prompts", env: "MAPLE_LOG_PROMPTS", valueName: "BOOL", defaultValue: () => false,
        help: "Log prompt and completion text at debug level (off: logs never contain them)", parse: boolean }),
    define({ key: "cacheRamMiB", flag: "cache-ram", env: "MAPLE_CACHE_RAM", valueName: "MIB", defaultValue: () => undefined,
        defaultText: `a quarter of the memory the model leaves, at most ${maxDefaultCacheRamMiB} (here ${defaultCacheRamMiB(processMemory().totalBytes, 0)} before the model, within a container's memory limit)`,
        help: "Prompt cache in host memory: slot states saved when a slot is reused, restored for a prompt that extends them (0 disables)",
        parse: integer(0, 1 << 24) }),
    define({ key: "cacheDir", flag: "cache-dir", env: "MAPLE_CACHE_DIR", valueName: "DIR", defaultValue: () => undefined,
        defaultText: "none (no disk tier)", help: "Prompt cache on disk, kept across restarts (entries keyed by the model file)", parse: nonEmpty }),
    define({ key: "cacheDiskMiB", flag: "cache-disk", env: "MAPLE_CACHE_DISK", valueName: "MIB", defaultValue: () => 8192,
        help: "Bound of the disk prompt cache in MAPLE_CACHE_DIR (0 disables it)", parse: integer(0, 1 << 30) }),
    define({ key: "swaFull", flag: "swa-full", env: "MAPLE_SWA_FULL", valueName: "BOOL", defaultValue: () => false,
        help: "Sliding-window models: keep every token's cells in the sliding-window layers (more memory) instead of their window, with checkpoints where prompts are cut back",
        parse: boolean }),
    define({ key: "weights", flag: "weights", env: "MAPLE_WEIGHTS", valueName: "auto|ram|mmap", defaultValue: () => "auto" as const,
        defaultText: "auto: ram when huge pages are on and the file fits in 80% of the available memory, else mmap",
        help: "How the weights reach llama.cpp: ram copies them into huge pages (faster decode on CPU, see docs/huge-pages.md), mmap maps the file (shared page cache, pageable)",
        parse: oneOf(["auto", "ram", "mmap"] as const) }),
    define({ key: "gpu", flag: "gpu", env: "MAPLE_GPU", valueName: "auto|cuda|vulkan|metal|cpu", defaultValue: () => "auto" as const,
        defaultText: "auto: the first of CUDA and Vulkan (Metal on a Mac) that has a device and kernels for the model's weight types, else the CPU",
        help: "The llama.cpp build that runs the model; the start-up log says which ran and why (docs/gpu.md). An explicit one that lacks kernels for the model's weight types still starts, with a warning",
        parse: oneOf(["auto", "cuda", "vulkan", "metal", "cpu"] as const) }),
    define({ key: "gpuLayers", flag: "gpu-layers", env: "MAPLE_GPU_LAYERS", valueName: "N|auto|max", defaultValue: () => "auto" as const,
        help: "Layers offloaded to the GPU (llama-server's --n-gpu-layers): auto fits the free VRAM, max all (refused when they do not fit), N that many",
        parse: gpuLayers }),
    define({ key: "keepBillingHeader", flag: "keep-billing-header", env: "MAPLE_KEEP_BILLING_HEADER", valueName: "BOOL", defaultValue: () => false,
        help: "Keep Claude Code's per-session x-anthropic-billing-header system block in the prompt (off: left out, so sessions share their cached preamble)",
        parse: boolean }),
    define({ key: "webUi", flag: "webui", env: "MAPLE_WEBUI", valueName: "BOOL", defaultValue: () => true,
        help: "Serve the built-in web chat at / (false: the API only)", parse: boolean })
] as const satisfies readonly SettingDefinition<keyof MapleConfig>[];

/**
 * Builds the config from CLI flag values (already split by the argument parser) and the
 * environment. Throws ConfigError naming the flag or variable on the first invalid value. With
 * `only`, the other settings keep their defaults.
 */
export function resolveConfig(flags: Partial<Record<string, string>>, env: NodeJS.ProcessEnv = process.env,
    only?: readonly (keyof MapleConfig)[]): MapleConfig {
    const config: Partial<Record<keyof MapleConfig, unknown>> = {};
    for (const setting of settings as readonly SettingDefinition[]) {
        // `only`: a command that uses a few settings (maple pull: --models-dir) is not stopped by an invalid other one
        const used = only === undefined || only.includes(setting.key);
        const fromFlag = used ? flags[setting.flag] : undefined;
        const fromEnv = used ? env[setting.env] : undefined;
        const [raw, source] = fromFlag !== undefined ? [fromFlag, `--${setting.flag}`] : [fromEnv, setting.env];
        if (raw === undefined || (source === setting.env && raw === "")) {
            config[setting.key] = setting.defaultValue();
            continue;
        }
        try {
            config[setting.key] = setting.parse(raw);
        } catch (error) {
            throw new ConfigError(`${source} ${(error as Error).message}`);
        }
    }
    return config as MapleConfig;
}

/** Defaults for every setting, with overrides: what tests and embedders start from. */
export function defaultConfig(overrides: Partial<MapleConfig> = {}): MapleConfig {
    return { ...resolveConfig({}, {}), ...overrides };
}

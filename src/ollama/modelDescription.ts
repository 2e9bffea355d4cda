import { createHash } from "node:crypto";
import type { ChatTemplateSource } from "../chatFormat/chatPrompt.js";
import type { ModelInfo, RuntimeInfo } from "../engine/types.js";
import { listedModelName } from "./modelName.js";

/**
 * The Ollama release whose API these routes follow, answered by `/api/version`: clients gate
 * features on it (they refuse an "old" server), so Maple's own version (in `maple`) would mislead them.
 */
export const ollamaApiVersion = "0.32.15";

/** api.ModelDetails. */
export interface OllamaModelDetails {
    parent_model: string;
    format: "gguf";
    family: string;
    families: string[];
    parameter_size: string;
    quantization_level: string;
    context_length: number;
}

/** What the routes describe the served model from. */
export interface ServedModel {
    id: string;
    model: ModelInfo;
    runtime: RuntimeInfo;
    chatTemplate: ChatTemplateSource;
    /** The model file's last change, ISO 8601. */
    modifiedAt: string;
    /** A stable id of this model file and engine (system_fingerprint): not the file's sha256, which would mean reading gigabytes. */
    fingerprint: string;
}

/** Ollama's human parameter count: "8.0B", "494M". */
export function parameterSize(count: number | undefined): string {
    if (count === undefined) return "";
    if (count >= 1e9) return `${(count / 1e9).toFixed(1)}B`;
    if (count >= 1e6) return `${Math.round(count / 1e6)}M`;
    return `${Math.round(count / 1e3)}K`;
}

export function modelDetails(served: ServedModel): OllamaModelDetails {
    const { model, runtime } = served;
    return {
        parent_model: "",
        format: "gguf",
        family: model.architecture,
        families: [model.architecture],
        parameter_size: parameterSize(model.parameterCount),
        // The largest share of the weights ("TQ2_0" of "TQ2_0 + Q4_K (head)").
        quantization_level: model.dtype.split(" ")[0] ?? model.dtype,
        // The slot's context: what a prompt may fill here (Copilot and Open WebUI size prompts by it).
        context_length: runtime.contextSize
    };
}

/** Ollama's digest field: 64 hex digits, stable for one model file and engine. */
export function modelDigest(served: ServedModel): string {
    return createHash("sha256").update(served.fingerprint).update(served.model.path).digest("hex");
}

/** One entry of `/api/tags` (api.ListModelResponse). */
export function listedModel(served: ServedModel): Record<string, unknown> {
    const name = listedModelName(served.id);
    return {
        name, model: name, modified_at: served.modifiedAt, size: served.model.fileSizeBytes, digest: modelDigest(served),
        details: modelDetails(served), capabilities: capabilities(served)
    };
}

/** One entry of `/api/ps` (api.ProcessModelResponse): loaded for good, so it never expires. */
export function runningModel(served: ServedModel): Record<string, unknown> {
    const name = listedModelName(served.id);
    return {
        name, model: name, size: served.model.fileSizeBytes, digest: modelDigest(served), details: modelDetails(served),
        // Maple keeps its one model loaded until it stops (Ollama's keep_alive -1 reports a far date too).
        expires_at: "2318-01-01T00:00:00Z",
        size_vram: served.runtime.device === "cpu" ? 0 : served.model.fileSizeBytes,
        context_length: served.runtime.contextSize
    };
}

/**
 * What the model can do, as `/api/show` and `/api/tags` list it: `completion` always; `tools`
 * when its template renders tools, or its format shows them itself (generic: Gemma's templates); `thinking` when its template writes its chat format's
 * reasoning opening (`<think>`, gpt-oss's analysis channel, Mistral's `[THINK]`). Clients
 * (Copilot, Open WebUI, Zed) offer tool calling and reasoning by these.
 */
export function capabilities(served: ServedModel): string[] {
    const template = served.chatTemplate.template;
    const reasoningOpen = served.chatTemplate.format.grammar.reasoningOpen;
    const thinks = reasoningOpen !== undefined && template.includes(reasoningOpen);
    const tools = /\btools\b/.test(template) || served.chatTemplate.format.name === "generic";
    return ["completion", ...(tools ? ["tools"] : []), ...(thinks ? ["thinking"] : [])];
}

/** `/api/show` (api.ShowResponse). `model_info` holds the architecture and the context length under GGUF's key names. */
export function showModel(served: ServedModel, sampling: { temperature: number }): Record<string, unknown> {
    const { model, runtime } = served;
    const arch = model.architecture;
    return {
        license: "",
        modelfile: `# Served by Maple; there is no Modelfile: the GGUF's own metadata and chat template are used.\nFROM ${model.path}\n`,
        parameters: [`temperature ${sampling.temperature}`, "top_p 0.95", "top_k 20", `num_ctx ${runtime.contextSize}`].join("\n"),
        template: served.chatTemplate.template,
        details: modelDetails(served),
        model_info: {
            "general.architecture": arch,
            // Copilot's Ollama provider names the model by it.
            "general.basename": served.id,
            ...(model.name !== undefined ? { "general.name": model.name } : {}),
            ...(model.parameterCount !== undefined ? { "general.parameter_count": model.parameterCount } : {}),
            // The slot's context, not the training one: what a client may fill here.
            [`${arch}.context_length`]: runtime.contextSize,
            [`${arch}.vocab_size`]: model.vocabularySize
        },
        capabilities: capabilities(served),
        modified_at: served.modifiedAt
    };
}

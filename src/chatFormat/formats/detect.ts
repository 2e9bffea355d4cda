import { templateCapabilities } from "../templateCapabilities.js";
import type { ChatFormatName } from "./names.js";

/**
 * Which chat format a chat template is written for, recognised from the text of the template
 * itself, as llama.cpp recognises templates (`common/chat.cpp`, `common_chat_templates_apply_jinja`
 * before its automatic parser, and `common_chat_try_specialized_template` after): each family's
 * template renders its own markers, so a marker's literal text in the template names the family.
 * The rules are tried in order, the more specific first (several families share `<tool_call>`).
 */
interface DetectionRule {
    format: ChatFormatName;
    /** What the rule looks for, as the start-up log says it. */
    because: string;
    matches(template: string): boolean;
}

const rules: readonly DetectionRule[] = [
    // gpt-oss: llama.cpp's first specialised template (`src.find("<|channel|>")`).
    { format: "harmony", because: "writes harmony's <|channel|> headers", matches: (template) => template.includes("<|channel|>") },
    // DeepSeek V3.1 before R1 (llama.cpp's order): V3.1's template has a `thinking` prefix mode.
    {
        format: "deepseek-v3.1", because: "has DeepSeek V3.1's thinking prefix",
        matches: (template) => template.includes("message['prefix'] is defined and message['prefix'] and thinking")
    },
    { format: "deepseek-r1", because: "writes DeepSeek's <｜tool▁calls▁begin｜> sections", matches: (template) => template.includes("<｜tool▁calls▁begin｜>") },
    // Mistral v11+ (Ministral 3, Magistral, Devstral, Small 3.2): llama.cpp's Ministral 3 rule
    // ([TOOL_CALLS] and [ARGS]) and Magistral's ([THINK] and [/THINK]).
    {
        format: "mistral", because: "writes [TOOL_CALLS]NAME[ARGS] calls or [THINK] blocks",
        matches: (template) => (template.includes("[TOOL_CALLS]") && template.includes("[ARGS]")) || (template.includes("[THINK]") && template.includes("[/THINK]"))
    },
    // Mistral Nemo, Small 3.0 / 3.1: llama.cpp's last rule (mistral_nemo).
    { format: "mistral-nemo", because: "writes [TOOL_CALLS] lists", matches: (template) => template.includes("[TOOL_CALLS]") },
    // GLM-4.5 / 4.6 / 4.7: llama.cpp's rule (before Hermes, whose <tool_call> it shares).
    {
        format: "glm4.5", because: "has GLM's [gMASK]<sop> and <arg_key> / <arg_value> calls",
        matches: (template) => template.includes("[gMASK]<sop>") && template.includes("<arg_key>") && template.includes("<arg_value>")
    },
    // Qwen3-Coder, Qwen3.5, Nemotron 3 Nano, StepFun 3.5 Flash: llama.cpp's specialised rule (before
    // Hermes, whose <tool_call> it shares), which leaves out templates without the newlines.
    {
        format: "qwen3-coder", because: "writes <tool_call> blocks of <function=…> and <parameter=…>",
        matches: (template) => template.includes("<tool_call>") && template.includes("<function=") && template.includes("<parameter=")
            && !template.includes("'<tool_call><function=' ~ tool_call.name ~ '>'")
    },
    // Hermes 2/3 Pro, Qwen2.5, QwQ, Qwen3: llama.cpp's last `<tool_call>` rule (hermes_2_pro).
    { format: "hermes", because: "writes <tool_call> blocks", matches: (template) => template.includes("<tool_call>") },
    // Llama 3.1 / 3.2 / 3.3: llama.cpp's rule (after Hermes, whose Llama-based templates use ChatML),
    // less functionary v3.1, which has the same ipython role and writes <function=…> calls.
    {
        format: "llama3", because: "has Llama 3's ipython role",
        matches: (template) => template.includes("<|start_header_id|>ipython<|end_header_id|>") && !template.includes("<function=")
    },
    // Gemma 2 / 3, Phi: a template that does not show the tools to the model at all (a probe
    // tool's name never reaches the prompt): llama.cpp served these with its generic format. A
    // template that shows them but matches no rule keeps the default.
    { format: "generic", because: "does not show the tools to the model", matches: (template) => !templateCapabilities(template).rendersTools }
];

/** The family a template is detected as, and why; undefined when no rule matches. */
export function detectChatFormat(template: string): { format: ChatFormatName; because: string } | undefined {
    const rule = rules.find((candidate) => candidate.matches(template));
    return rule === undefined ? undefined : { format: rule.format, because: rule.because };
}

import { qwen3ChatTemplate } from "./qwen3Tokenizer.js";

const qwen3GenerationPrompt = `{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\\n\\n</think>\\n\\n' }}
    {%- endif %}
{%- endif %}`;

// maple always reasons, so the prompt itself opens the think block and the model's raw output
// starts inside the reasoning; with thinking disabled the prompt carries the empty block, as
// Qwen3's does
const mapleGenerationPrompt = `{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n<think>\\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '\\n</think>\\n\\n' }}
    {%- endif %}
{%- endif %}`;

/**
 * maple-preview's chat template: Qwen3's (tools, tool calls and responses, reasoning_content on
 * assistant turns are all unchanged) except for the generation prompt.
 */
export function mapleChatTemplate(): string {
    const qwen3 = qwen3ChatTemplate();
    if (!qwen3.includes(qwen3GenerationPrompt)) {
        throw new Error("Qwen3 chat template changed: its generation prompt block was not found");
    }
    return qwen3.replace(qwen3GenerationPrompt, mapleGenerationPrompt);
}

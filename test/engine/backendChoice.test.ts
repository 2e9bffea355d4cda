import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { chooseBackend, keepBackend, lackingWeightTypes, noDeviceWarning, type GpuBackend } from "../../src/engine/backendChoice.js";
import { weightTypeShares } from "../../src/engine/weightTypes.js";

/** maple-preview's mix: ternary experts (TQ2_0) nearly all of it, Q4_K embeddings, F32 norms. */
const maplePreview = weightTypeShares([
    { name: "blk.0.ffn_up_exps.weight", type: "TQ2_0", elements: 9_700 },
    { name: "token_embd.weight", type: "Q4_K", elements: 290 },
    { name: "blk.0.attn_norm.weight", type: "F32", elements: 10 }
]);
const maplePreviewTq1 = weightTypeShares([
    { name: "blk.0.ffn_up_exps.weight", type: "TQ1_0", elements: 9_700 },
    { name: "token_embd.weight", type: "Q4_K", elements: 300 }
]);
const qwen = weightTypeShares([{ name: "blk.0.attn_q.weight", type: "Q8_0", elements: 900 }, { name: "blk.0.attn_norm.weight", type: "F32", elements: 100 }]);

/** A probe that finds these devices, and records which backends were asked. */
function probeOf(devices: Partial<Record<GpuBackend, string[]>>): { probe: (backend: GpuBackend) => Promise<string[]>; asked: GpuBackend[] } {
    const asked: GpuBackend[] = [];
    return {
        asked,
        probe: async (backend) => {
            asked.push(backend);
            return devices[backend] ?? [];
        }
    };
}

describe("weightTypeShares", () => {
    it("gives each type's share of the parameters, largest first", () => {
        assert.deepEqual(maplePreview.map((weight) => weight.type), ["TQ2_0", "Q4_K", "F32"]);
        assert.equal(maplePreview[0]!.share, 0.97);
        assert.deepEqual(weightTypeShares([]), []);
    });
});

describe("lackingWeightTypes (the bundled llama.cpp's kernels)", () => {
    it("CUDA has no TQ1_0 or TQ2_0 kernels, Metal no TQ1_0, Vulkan has both", () => {
        assert.deepEqual(lackingWeightTypes("cuda", maplePreview).map((weight) => weight.type), ["TQ2_0"]);
        assert.deepEqual(lackingWeightTypes("cuda", maplePreviewTq1).map((weight) => weight.type), ["TQ1_0"]);
        assert.deepEqual(lackingWeightTypes("metal", maplePreview), []);
        assert.deepEqual(lackingWeightTypes("metal", maplePreviewTq1).map((weight) => weight.type), ["TQ1_0"]);
        assert.deepEqual(lackingWeightTypes("vulkan", maplePreview), []);
        assert.deepEqual(lackingWeightTypes("vulkan", maplePreviewTq1), []);
        assert.deepEqual(lackingWeightTypes("cuda", qwen), []);
    });
});

describe("chooseBackend", () => {
    it("auto on a CUDA machine: a model CUDA has kernels for goes to CUDA, without probing Vulkan", async () => {
        const { probe, asked } = probeOf({ cuda: ["NVIDIA RTX 4090"], vulkan: ["NVIDIA RTX 4090"] });
        const choice = await chooseBackend("auto", { detected: ["cuda", "vulkan"], weights: qwen, probe });
        assert.equal(choice.backend, "cuda");
        assert.deepEqual(choice.devices, ["NVIDIA RTX 4090"]);
        assert.deepEqual(asked, ["cuda"]);
        assert.deepEqual(choice.warnings, []);
        assert.equal(choice.reason, "auto: CUDA (NVIDIA RTX 4090)");
    });

    it("auto on a CUDA machine: TQ2_0 experts go to Vulkan, and the log says CUDA lacks their kernels", async () => {
        const { probe, asked } = probeOf({ cuda: ["NVIDIA RTX 4090"], vulkan: ["NVIDIA RTX 4090"] });
        const choice = await chooseBackend("auto", { detected: ["cuda", "vulkan"], weights: maplePreview, probe });
        assert.equal(choice.backend, "vulkan");
        assert.deepEqual(asked, ["vulkan"], "CUDA is not even probed");
        assert.match(choice.reason, /^auto: Vulkan \(NVIDIA RTX 4090\); CUDA left out: .* no kernels for TQ2_0 \(97% of the weights\)$/);
        assert.equal(choice.warnings.length, 1);
        assert.match(choice.warnings[0]!, /CUDA left out.*TQ2_0.*--gpu cuda would run those products on the CPU/);
    });

    it("auto on a CUDA machine without a Vulkan loader: TQ2_0 goes to the CPU, saying why", async () => {
        const { probe } = probeOf({ cuda: ["NVIDIA RTX 4090"] });
        const choice = await chooseBackend("auto", { detected: ["cuda"], weights: maplePreview, probe });
        assert.equal(choice.backend, "cpu");
        assert.match(choice.reason, /^auto: CPU; CUDA left out: .*TQ2_0/);
    });

    it("auto passes over a build that loads but finds no device (Mesa's lavapipe, which ggml leaves out), and falls to the CPU", async () => {
        const { probe, asked } = probeOf({});
        const choice = await chooseBackend("auto", { detected: ["vulkan"], weights: qwen, probe });
        assert.equal(choice.backend, "cpu");
        assert.deepEqual(asked, ["vulkan"]);
        assert.equal(choice.reason, "auto: CPU; Vulkan left out: its build loads but finds no device");
        assert.deepEqual(choice.warnings, [], "no GPU was left unused");
    });

    it("auto with no GPU build detected takes the CPU without probing", async () => {
        const { probe, asked } = probeOf({});
        const choice = await chooseBackend("auto", { detected: [], weights: maplePreview, probe });
        assert.equal(choice.backend, "cpu");
        assert.deepEqual(asked, []);
        assert.match(choice.reason, /no GPU backend here/);
    });

    it("auto on a Mac: TQ2_0 runs on Metal, TQ1_0 goes to the CPU", async () => {
        const { probe } = probeOf({ metal: ["Apple M3"] });
        assert.equal((await chooseBackend("auto", { detected: ["metal"], weights: maplePreview, probe })).backend, "metal");
        const tq1 = await chooseBackend("auto", { detected: ["metal"], weights: maplePreviewTq1, probe });
        assert.equal(tq1.backend, "cpu");
        assert.match(tq1.reason, /Metal left out: .*TQ1_0/);
    });

    it("an explicit backend is kept without probing, and one that lacks the weights' kernels starts with a warning that names them", async () => {
        const { probe, asked } = probeOf({});
        const cuda = await chooseBackend("cuda", { detected: ["cuda", "vulkan"], weights: maplePreview, probe });
        assert.equal(cuda.backend, "cuda");
        assert.equal(cuda.reason, "--gpu cuda");
        assert.equal(cuda.warnings.length, 1);
        assert.match(cuda.warnings[0]!, /--gpu cuda: .*CUDA backend has no kernels for TQ2_0 \(97% of the weights\).*host memory.*--gpu vulkan runs them all on the GPU/);
        const vulkan = await chooseBackend("vulkan", { detected: ["cuda", "vulkan"], weights: maplePreview, probe });
        assert.deepEqual(vulkan.warnings, []);
        const cpu = await chooseBackend("cpu", { detected: ["cuda", "vulkan"], weights: maplePreview, probe });
        assert.equal(cpu.backend, "cpu");
        assert.deepEqual(asked, []);
    });

    it("a later model under auto stays on the first one's backend, with a warning when that one lacks its kernels", async () => {
        const { probe } = probeOf({ cuda: ["NVIDIA RTX 4090"] });
        const first = await chooseBackend("auto", { detected: ["cuda"], weights: qwen, probe });
        const later = keepBackend(first, maplePreview);
        assert.equal(later.backend, "cuda");
        assert.match(later.warnings[0]!, /stays on CUDA.*TQ2_0/);
        assert.deepEqual(keepBackend(first, qwen).warnings, []);
    });

    it("names lavapipe's variable in the no-device warning for Vulkan", () => {
        assert.match(noDeviceWarning("vulkan"), /GGML_VK_VISIBLE_DEVICES/);
        assert.doesNotMatch(noDeviceWarning("cuda"), /GGML_VK_VISIBLE_DEVICES/);
    });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { float32ToFloat16Bits } from "../../src/models/synthetic/float16.js";
import { GgmlType, ggmlTensorBytes } from "../../src/models/synthetic/ggmlTypes.js";
import { mapleTensors } from "../../src/models/synthetic/mapleArchitecture.js";
import { findSyntheticModelSpec } from "../../src/models/synthetic/modelCatalog.js";
import type { SyntheticModelSpec } from "../../src/models/synthetic/modelSpec.js";
import { qwen3Tensors } from "../../src/models/synthetic/qwen3Architecture.js";
import { tensorDataChunks } from "../../src/models/synthetic/tensorData.js";
import type { TensorPlan } from "../../src/models/synthetic/tensorPlan.js";

function float16BitsToFloat32(bits: number): number {
    const sign = bits & 0x8000 ? -1 : 1;
    const exponent = (bits >>> 10) & 0x1f;
    const mantissa = bits & 0x3ff;
    if (exponent === 0) return sign * mantissa * 2 ** -24;
    if (exponent === 0x1f) return mantissa === 0 ? sign * Infinity : NaN;
    return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

function concat(chunks: Iterable<Uint8Array>): Uint8Array {
    return Buffer.concat([...chunks]);
}

function standardDeviation(values: readonly number[]): number {
    const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
    return Math.sqrt(values.reduce((sum, value) => sum + (value - mean) ** 2, 0) / values.length);
}

const std = 0.05;
const plan = (type: GgmlType, shape: number[], init: TensorPlan["init"] = { kind: "random", std }): TensorPlan => ({
    name: "test.weight",
    shape,
    type,
    init
});

describe("float32ToFloat16Bits", () => {
    it("encodes normal, subnormal and out-of-range values like IEEE half precision", () => {
        assert.equal(float32ToFloat16Bits(1), 0x3c00);
        assert.equal(float32ToFloat16Bits(-2), 0xc000);
        assert.equal(float32ToFloat16Bits(0.5), 0x3800);
        assert.equal(float32ToFloat16Bits(65504), 0x7bff);
        assert.equal(float32ToFloat16Bits(1e6), 0x7c00);
        assert.equal(float32ToFloat16Bits(2 ** -24), 0x0001);
        assert.equal(float32ToFloat16Bits(1e-9), 0);
        assert.equal(float32ToFloat16Bits(1 + 2 ** -11), 0x3c00, "ties round to even");
        assert.equal(float32ToFloat16Bits(1 + 3 * 2 ** -11), 0x3c02, "ties round to even");
    });

    it("round-trips scales to within half-precision accuracy", () => {
        for (const value of [0.02, 0.0625, 1 / 73.9, 0.001, 3.3]) {
            const back = float16BitsToFloat32(float32ToFloat16Bits(value));
            assert.ok(Math.abs(back - value) / value < 1e-3, `${value} → ${back}`);
        }
    });
});

describe("tensorDataChunks", () => {
    it("is deterministic per seed", () => {
        const tensor = plan(GgmlType.Q8_0, [64, 8]);
        assert.deepEqual(concat(tensorDataChunks(tensor, "a")), concat(tensorDataChunks(tensor, "a")));
        assert.notDeepEqual(concat(tensorDataChunks(tensor, "a")), concat(tensorDataChunks(tensor, "b")));
    });

    it("streams large tensors in bounded chunks that add up to the tensor's size", () => {
        const tensor = plan(GgmlType.TQ2_0, [2048, 512, 16]); // 16.5 MB
        let total = 0;
        for (const chunk of tensorDataChunks(tensor, "s")) {
            assert.ok(chunk.length <= 4 << 20);
            total += chunk.length;
        }
        assert.equal(total, ggmlTensorBytes(GgmlType.TQ2_0, [2048, 512, 16]));
    });

    it("writes truly ternary TQ2_0 blocks (2-bit values 0..2, scale after the quants)", () => {
        const bytes = concat(tensorDataChunks(plan(GgmlType.TQ2_0, [256, 64]), "s"));
        assert.equal(bytes.length, 64 * 66);
        const values: number[] = [];
        for (let block = 0; block < 64; block++) {
            const start = block * 66;
            const scale = float16BitsToFloat32((bytes[start + 64] ?? 0) | ((bytes[start + 65] ?? 0) << 8));
            for (let i = 0; i < 64; i++) {
                for (let shift = 0; shift < 8; shift += 2) {
                    const q = ((bytes[start + i] ?? 0) >> shift) & 3;
                    assert.ok(q <= 2, `2-bit value ${q} is not ternary`);
                    values.push((q - 1) * scale);
                }
            }
        }
        assert.ok(Math.abs(standardDeviation(values) / std - 1) < 0.05, `std ${standardDeviation(values)}`);
    });

    for (const [type, name, blockBytes, dequantize] of [
        [GgmlType.Q8_0, "Q8_0", 34, (block: Uint8Array) => [...new Int8Array(block.buffer, block.byteOffset + 2, 32)]],
        [GgmlType.Q4_0, "Q4_0", 18, (block: Uint8Array) => [...block.subarray(2)].flatMap((byte) => [(byte & 15) - 8, (byte >> 4) - 8])]
    ] as const) {
        it(`writes ${name} blocks with the scale first and the requested spread`, () => {
            const bytes = concat(tensorDataChunks(plan(type, [256, 64]), "s"));
            assert.equal(bytes.length, 512 * blockBytes);
            const values: number[] = [];
            for (let start = 0; start < bytes.length; start += blockBytes) {
                const block = bytes.subarray(start, start + blockBytes);
                const scale = float16BitsToFloat32((block[0] ?? 0) | ((block[1] ?? 0) << 8));
                values.push(...dequantize(block).map((q) => q * scale));
            }
            assert.ok(Math.abs(standardDeviation(values) / std - 1) < 0.05, `std ${standardDeviation(values)}`);
        });
    }

    it("writes Q4_K blocks as llama.cpp's dequantize_row_q4_K reads them, zero-mean with the requested spread", () => {
        const bytes = concat(tensorDataChunks(plan(GgmlType.Q4_K, [2048, 16]), "s"));
        assert.equal(bytes.length, 128 * 144);
        const values: number[] = [];
        for (let start = 0; start < bytes.length; start += 144) {
            const block = bytes.subarray(start, start + 144);
            const d = float16BitsToFloat32((block[0] ?? 0) | ((block[1] ?? 0) << 8));
            const dmin = float16BitsToFloat32((block[2] ?? 0) | ((block[3] ?? 0) << 8));
            const scales = block.subarray(4, 16);
            // get_scale_min_k4 (ggml-quants.c)
            const scaleMin = (j: number): [number, number] => (j < 4
                ? [(scales[j] ?? 0) & 63, (scales[j + 4] ?? 0) & 63]
                : [((scales[j + 4] ?? 0) & 0xf) | (((scales[j - 4] ?? 0) >> 6) << 4), ((scales[j + 4] ?? 0) >> 4) | (((scales[j] ?? 0) >> 6) << 4)]);
            const quants = block.subarray(16);
            for (let group = 0; group < 4; group++) {
                const [lowScale, lowMin] = scaleMin(2 * group);
                const [highScale, highMin] = scaleMin(2 * group + 1);
                for (let l = 0; l < 32; l++) values.push(d * lowScale * ((quants[32 * group + l] ?? 0) & 0xf) - dmin * lowMin);
                for (let l = 0; l < 32; l++) values.push(d * highScale * ((quants[32 * group + l] ?? 0) >> 4) - dmin * highMin);
            }
        }
        const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
        assert.ok(Math.abs(mean) < std * 0.05, `mean ${mean}`);
        assert.ok(Math.abs(standardDeviation(values) / std - 1) < 0.05, `std ${standardDeviation(values)}`);
    });

    it("keeps Q8_0 quants within llama.cpp's [-127, 127]", () => {
        const bytes = concat(tensorDataChunks(plan(GgmlType.Q8_0, [1024, 256]), "s"));
        let minusOneTwentySeven = 0;
        for (let start = 0; start < bytes.length; start += 34) {
            for (const q of new Int8Array(bytes.buffer, bytes.byteOffset + start + 2, 32)) {
                assert.notEqual(q, -128);
                if (q === -127) minusOneTwentySeven++;
            }
        }
        // -128 folds onto -127, which therefore shows up about twice as often as other values
        const expected = (2 * 1024 * 256) / 256;
        assert.ok(Math.abs(minusOneTwentySeven / expected - 1) < 0.1, `${minusOneTwentySeven} vs ${expected}`);
    });

    it("writes F32 and F16 values, random or constant, that are finite and bounded", () => {
        const random32 = concat(tensorDataChunks(plan(GgmlType.F32, [4096]), "s"));
        const floats = [...new Float32Array(random32.buffer, random32.byteOffset, 4096)];
        assert.ok(floats.every((value) => Math.abs(value) <= std * Math.sqrt(3)));
        assert.ok(Math.abs(standardDeviation(floats) / std - 1) < 0.05);

        const random16 = concat(tensorDataChunks(plan(GgmlType.F16, [4096]), "s"));
        const halves = [...new Uint16Array(random16.buffer, random16.byteOffset, 4096)].map(float16BitsToFloat32);
        assert.ok(halves.every((value) => Number.isFinite(value) && Math.abs(value) <= std * Math.sqrt(3) * 1.001));

        const ones = concat(tensorDataChunks(plan(GgmlType.F32, [300], { kind: "constant", value: 1 }), "s"));
        assert.deepEqual([...new Float32Array(ones.buffer, ones.byteOffset, 300)], new Array<number>(300).fill(1));
    });

    it("rejects rows that are not a whole number of blocks", () => {
        assert.throws(() => ggmlTensorBytes(GgmlType.TQ2_0, [128, 4]), /multiple of 256/);
    });
});

describe("model shapes", () => {
    function parameterCounts(name: string): { total: number; active: number; bytes: number } {
        const spec = findSyntheticModelSpec(name) ?? assert.fail(`no spec ${name}`);
        const tensors = spec.architecture === "maple" ? mapleTensors(spec) : qwen3Tensors(spec);
        const usedFraction = (s: SyntheticModelSpec): number => (s.architecture === "maple" ? s.experts.usedCount / s.experts.count : 1);
        let total = 0;
        let active = 0;
        let bytes = 0;
        for (const tensor of tensors) {
            const values = tensor.shape.reduce((product, dim) => product * dim, 1);
            bytes += ggmlTensorBytes(tensor.type, tensor.shape); // also checks block alignment
            total += values;
            if (tensor.name === "token_embd.weight") continue; // a lookup, not compute
            active += tensor.name.endsWith("_exps.weight") ? values * usedFraction(spec) : values;
        }
        return { total, active, bytes };
    }

    it("maple-preview has ~20B parameters, ~1B active, and is 5-6 GB", () => {
        const { total, active, bytes } = parameterCounts("maple-preview");
        assert.ok(total > 19.5e9 && total < 21e9, `total ${total}`);
        assert.ok(active > 0.9e9 && active < 1.5e9, `active ${active}`);
        assert.ok(bytes > 5e9 && bytes < 6.1e9, `bytes ${bytes}`);
    });

    it("qwen3-0.6b has Qwen3-0.6B's parameter count (tied embeddings)", () => {
        const { total } = parameterCounts("qwen3-0.6b");
        assert.ok(Math.abs(total - 596e6) < 2e6, `total ${total}`);
    });

    it("the tiny models stay small", () => {
        assert.ok(parameterCounts("maple-tiny").bytes < 100e6);
        assert.ok(parameterCounts("qwen3-tiny").bytes < 60e6);
    });
});

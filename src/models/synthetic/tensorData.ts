import { float32ToFloat16Bits } from "./float16.js";
import { GgmlType, ggmlBlockGeometry, ggmlTensorBytes, ggmlTypeName } from "./ggmlTypes.js";
import { SeededRandomBytes } from "./seededRandomBytes.js";
import type { TensorInit, TensorPlan } from "./tensorPlan.js";

// GGUF is little-endian and the encoders below write through typed arrays in host byte order.
if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) {
    throw new Error("synthetic GGUF writing needs a little-endian host");
}

/** ~4 MiB per chunk: large enough to amortise per-chunk overhead, small enough to stream. */
const targetChunkBytes = 4 << 20;

/** Encodes `blocks` consecutive blocks of a tensor. */
type BlockEncoder = (blocks: number, random: SeededRandomBytes) => Uint8Array;

/**
 * The bytes of one tensor, in order, as a sequence of chunks, so that even a multi-gigabyte
 * expert tensor never has to be held in memory. `seed` decides the random values.
 */
export function* tensorDataChunks(plan: TensorPlan, seed: string): Generator<Uint8Array> {
    const { bytesPerBlock } = ggmlBlockGeometry(plan.type);
    const totalBlocks = ggmlTensorBytes(plan.type, plan.shape) / bytesPerBlock;
    // an even block count keeps every chunk a multiple of 4 bytes (every block size is even),
    // which the Uint32 views of the encoders rely on
    const blocksPerChunk = Math.max(2, 2 * Math.floor(targetChunkBytes / bytesPerBlock / 2));
    const encode = blockEncoder(plan.type, plan.init);
    const random = new SeededRandomBytes(seed);
    for (let done = 0; done < totalBlocks; done += blocksPerChunk) {
        yield encode(Math.min(blocksPerChunk, totalBlocks - done), random);
    }
}

function blockEncoder(type: GgmlType, init: TensorInit): BlockEncoder {
    if (init.kind === "constant") {
        if (type === GgmlType.F32) return (values) => bytesOf(new Float32Array(values).fill(init.value));
        if (type === GgmlType.F16) return (values) => bytesOf(new Uint16Array(values).fill(float32ToFloat16Bits(init.value)));
        throw new Error(`constant ${ggmlTypeName(type)} tensors are not supported`);
    }
    const { std } = init;
    switch (type) {
        case GgmlType.F32:
            return (values, random) => uniformFloats(values, std, random);
        case GgmlType.F16:
            return (values, random) => {
                const bytes = uniformFloats(values, std, random);
                const floats = new Float32Array(bytes.buffer, bytes.byteOffset, values);
                return bytesOf(Uint16Array.from(floats, float32ToFloat16Bits));
            };
        case GgmlType.Q8_0: {
            // int8 quants uniform over [-127, 127] (-128 folded onto -127) have a std of ~73.6
            const encode = fixedBytesInRandomBlocks(type, 0, float16Bytes(std / 73.6));
            return (blocks, random) => encode(blocks, random, avoidMinus128);
        }
        case GgmlType.Q4_0:
            // 4-bit quants (q - 8) uniform over [-8, 7] have a standard deviation of ~4.61
            return fixedBytesInRandomBlocks(type, 0, float16Bytes(std / 4.61));
        case GgmlType.Q4_K:
            return fixedBytesInRandomBlocks(type, 0, q4KBlockHeader(std));
        case GgmlType.TQ2_0: {
            // after ternarize(), values are -d, 0, +d with probabilities 1/4, 1/2, 1/4: std = d/√2
            const encode = fixedBytesInRandomBlocks(type, 64, float16Bytes(std * Math.SQRT2));
            return (blocks, random) => encode(blocks, random, ternarize);
        }
    }
}

/** Uniform floats in [-a, a] with a = std·√3, so their standard deviation is `std`. */
function uniformFloats(values: number, std: number, random: SeededRandomBytes): Uint8Array {
    const bytes = random.next(values * 4);
    const words = new Uint32Array(bytes.buffer, bytes.byteOffset, values);
    const floats = new Float32Array(bytes.buffer, bytes.byteOffset, values);
    const halfRange = std * Math.sqrt(3);
    for (let i = 0; i < values; i++) {
        floats[i] = ((words[i] ?? 0) / 0x80000000 - 1) * halfRange;
    }
    return bytes;
}

/**
 * Quantized blocks whose quants are the raw random bytes and whose scale fields, `fixed` at
 * `fixedOffset` inside each block, are the same in every block. `adjust` may reshape the random
 * bytes first.
 */
function fixedBytesInRandomBlocks(type: GgmlType, fixedOffset: number, fixed: Uint8Array) {
    const { bytesPerBlock } = ggmlBlockGeometry(type);
    return (blocks: number, random: SeededRandomBytes, adjust?: (bytes: Uint8Array) => void): Uint8Array => {
        const bytes = random.next(blocks * bytesPerBlock);
        adjust?.(bytes);
        for (let offset = fixedOffset; offset < bytes.length; offset += bytesPerBlock) bytes.set(fixed, offset);
        return bytes;
    };
}

/** An fp16 value as its two little-endian bytes. */
function float16Bytes(value: number): Uint8Array {
    const bits = float32ToFloat16Bits(value);
    return Uint8Array.of(bits & 0xff, bits >>> 8);
}

/**
 * The first 16 bytes of every Q4_K block (ggml-common.h block_q4_K): d, dmin, then the 6-bit
 * scale and min of each of the 8 sub-blocks, packed as get_scale_min_k4 reads them. Every
 * sub-block gets scale 1 and min 1, so a value is d·q − dmin; with dmin = 7.5·d that is
 * d·(q − 7.5), zero-mean, and 4-bit quants uniform over [0, 15] have a std of ~4.61.
 */
function q4KBlockHeader(std: number): Uint8Array {
    const d = std / 4.61;
    const header = new Uint8Array(16);
    header.set(float16Bytes(d), 0);
    header.set(float16Bytes(7.5 * d), 2);
    // sub-blocks 0-3: low 6 bits of bytes 0-3 (scales) and 4-7 (mins); sub-blocks 4-7: the
    // nibbles of bytes 8-11 (scale low, min high), whose top bits (from bytes 0-7) are 0
    header.fill(1, 4, 12);
    header.fill(0x11, 12, 16);
    return header;
}

/**
 * Turns every 2-bit field equal to 3 (which TQ2_0 would decode as +2) into 1 (decoded as 0),
 * so the weights are truly ternary like a BitNet-style model's. Works on 16 fields per 32-bit
 * word: a field is 3 exactly when both of its bits are set.
 */
function ternarize(bytes: Uint8Array): void {
    const words = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length >>> 2);
    for (let i = 0; i < words.length; i++) {
        const word = words[i] ?? 0;
        const bothBitsSet = word & (word >>> 1) & 0x55555555;
        words[i] = word ^ (bothBitsSet << 1);
    }
    for (let i = words.length * 4; i < bytes.length; i++) {
        const byte = bytes[i] ?? 0;
        bytes[i] = byte ^ ((byte & (byte >>> 1) & 0x55) << 1);
    }
}

/**
 * Replaces every int8 -128 (0x80) with -127 (0x81): llama.cpp's quantizer only produces
 * [-127, 127], and SIMD kernels that take |q| in int8 may rely on it. Four bytes per step:
 * `exactZeroBytes` marks (with 0x80) exactly the bytes that were 0x80.
 */
function avoidMinus128(bytes: Uint8Array): void {
    const words = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length >>> 2);
    for (let i = 0; i < words.length; i++) {
        const word = words[i] ?? 0;
        words[i] = word | (exactZeroBytes(word ^ 0x80808080) >>> 7);
    }
    for (let i = words.length * 4; i < bytes.length; i++) {
        if (bytes[i] === 0x80) bytes[i] = 0x81;
    }
}

/** 0x80 in each byte of `word` that is zero, 0 elsewhere (no false positives, unlike v - 0x01…). */
function exactZeroBytes(word: number): number {
    return ~(((word & 0x7f7f7f7f) + 0x7f7f7f7f) | word | 0x7f7f7f7f) >>> 0;
}

function bytesOf(array: Float32Array | Uint16Array): Uint8Array {
    return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}

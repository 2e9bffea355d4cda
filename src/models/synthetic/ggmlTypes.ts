/**
 * The ggml tensor types the synthetic writer can produce, with their on-disk block geometry
 * (from ggml/src/ggml-common.h). Every type is stored as consecutive blocks; a row's length
 * must be a multiple of the block's value count.
 */
export enum GgmlType {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q8_0 = 8,
    Q4_K = 12,
    TQ2_0 = 35
}

interface BlockGeometry {
    /** values per block */
    readonly valuesPerBlock: number;
    /** bytes per block */
    readonly bytesPerBlock: number;
}

const blockGeometry: Readonly<Record<GgmlType, BlockGeometry>> = {
    [GgmlType.F32]: { valuesPerBlock: 1, bytesPerBlock: 4 },
    [GgmlType.F16]: { valuesPerBlock: 1, bytesPerBlock: 2 },
    // block_q4_0: fp16 scale, then 16 bytes of nibbles
    [GgmlType.Q4_0]: { valuesPerBlock: 32, bytesPerBlock: 18 },
    // block_q8_0: fp16 scale, then 32 int8
    [GgmlType.Q8_0]: { valuesPerBlock: 32, bytesPerBlock: 34 },
    // block_q4_K: fp16 super-scale d, fp16 super-min dmin, 12 bytes of packed 6-bit sub-block
    // scales and mins (8 sub-blocks of 32), then 128 bytes of nibbles (QK_K = 256)
    [GgmlType.Q4_K]: { valuesPerBlock: 256, bytesPerBlock: 144 },
    // block_tq2_0: 64 bytes of 2-bit values, then the fp16 scale (QK_K = 256)
    [GgmlType.TQ2_0]: { valuesPerBlock: 256, bytesPerBlock: 66 }
};

export function ggmlBlockGeometry(type: GgmlType): BlockGeometry {
    return blockGeometry[type];
}

export function ggmlTypeName(type: GgmlType): string {
    return GgmlType[type];
}

/** Bytes a tensor of `shape` (ggml order: shape[0] is the row length) takes on disk. */
export function ggmlTensorBytes(type: GgmlType, shape: readonly number[]): number {
    const { valuesPerBlock, bytesPerBlock } = blockGeometry[type];
    const rowLength = shape[0] ?? 1;
    if (rowLength % valuesPerBlock !== 0) {
        throw new Error(`row length ${rowLength} is not a multiple of ${valuesPerBlock} (${ggmlTypeName(type)})`);
    }
    const rows = shape.slice(1).reduce((product, dim) => product * dim, 1);
    return (rowLength / valuesPerBlock) * bytesPerBlock * rows;
}

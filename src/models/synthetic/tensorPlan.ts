import type { GgmlType } from "./ggmlTypes.js";

/** How a tensor's values are made up. */
export type TensorInit =
    /** every value equal, e.g. 1.0 for RMS-norm weights so norms pass activations through */
    | { readonly kind: "constant"; readonly value: number }
    /** zero-mean random values with this standard deviation */
    | { readonly kind: "random"; readonly std: number };

/** One tensor of a synthetic model: its GGUF name, shape, storage type and contents. */
export interface TensorPlan {
    readonly name: string;
    /** ggml order: shape[0] is the row length (the fastest-varying dimension) */
    readonly shape: readonly number[];
    readonly type: GgmlType;
    readonly init: TensorInit;
}

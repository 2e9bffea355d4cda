export interface TensorSummary {
    name: string;
    type: string;
    elements: number;
}

const ternaryTypes = new Set(["TQ1_0", "TQ2_0"]);

/**
 * Names the weight types of a model by share of parameters, largest first, and marks ternary
 * expert tensors as such, e.g. "TQ2_0 ternary experts + Q8_0". This is /health's `dtype`.
 */
export function describeWeightTypes(tensors: readonly TensorSummary[]): string {
    const byType = new Map<string, number>();
    for (const tensor of tensors) {
        const label = ternaryTypes.has(tensor.type) && tensor.name.includes("_exps") ? `${tensor.type} ternary experts` : tensor.type;
        byType.set(label, (byType.get(label) ?? 0) + tensor.elements);
    }
    return [...byType.entries()]
        .sort((a, b) => b[1] - a[1])
        .filter(([, elements], index) => index === 0 || elements > 0)
        .map(([label]) => label)
        .slice(0, 3)
        .join(" + ");
}

/** Each weight type's share of the model's parameters (0–1), largest first: what a backend's kernels must cover. */
export function weightTypeShares(tensors: readonly TensorSummary[]): { type: string; share: number }[] {
    const byType = new Map<string, number>();
    let total = 0;
    for (const tensor of tensors) {
        byType.set(tensor.type, (byType.get(tensor.type) ?? 0) + tensor.elements);
        total += tensor.elements;
    }
    return [...byType.entries()].map(([type, elements]) => ({ type, share: total === 0 ? 0 : elements / total })).sort((a, b) => b.share - a.share);
}

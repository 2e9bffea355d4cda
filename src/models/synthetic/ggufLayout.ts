import { GGUFValueType, serializeGgufMetadata, type GGUFTypedMetadata } from "@huggingface/gguf";
import { ggmlTensorBytes } from "./ggmlTypes.js";
import type { MetadataEntries } from "./metadataValues.js";
import type { TensorPlan } from "./tensorPlan.js";

/** GGUF's default `general.alignment`: tensor data offsets are multiples of 32 bytes. */
export const ggufAlignment = 32;

export interface PlacedTensor {
    readonly plan: TensorPlan;
    /** offset from the start of the tensor data section */
    readonly offset: number;
    readonly bytes: number;
}

/** Where everything goes in a GGUF v3 file, computed before a single tensor byte is made. */
export interface GgufLayout {
    /** magic, version, counts, metadata, tensor infos and the padding up to the data section */
    readonly header: Uint8Array;
    readonly tensors: readonly PlacedTensor[];
    readonly totalBytes: number;
}

export function layoutGguf(metadata: MetadataEntries, plans: readonly TensorPlan[]): GgufLayout {
    const { tensors, dataBytes } = placeTensors(plans);
    const header = Buffer.concat([serializeMetadataSection(metadata, tensors.length), ...tensors.map(tensorInfo)]);
    const paddedHeader = new Uint8Array(alignUp(header.length));
    paddedHeader.set(header);
    return { header: paddedHeader, tensors, totalBytes: paddedHeader.length + dataBytes };
}

/** Each tensor at the next aligned offset; `dataBytes` includes the padding after the last one. */
export function placeTensors(plans: readonly TensorPlan[]): { tensors: PlacedTensor[]; dataBytes: number } {
    let end = 0;
    const tensors = plans.map((plan): PlacedTensor => {
        const offset = alignUp(end);
        const bytes = ggmlTensorBytes(plan.type, plan.shape);
        end = offset + bytes;
        return { plan, offset, bytes };
    });
    return { tensors, dataBytes: alignUp(end) };
}

export function alignUp(value: number): number {
    return Math.ceil(value / ggufAlignment) * ggufAlignment;
}

/**
 * Magic, version, tensor count, key count and the key/value pairs. `serializeGgufMetadata` pads
 * its output to the alignment as if tensor data came next, but in GGUF the tensor infos follow
 * the metadata directly, so it is asked for an alignment of 1 (no padding).
 */
function serializeMetadataSection(metadata: MetadataEntries, tensorCount: number): Uint8Array {
    const typedMetadata = {
        version: { value: 3, type: GGUFValueType.UINT32 },
        tensor_count: { value: BigInt(tensorCount), type: GGUFValueType.UINT64 },
        kv_count: { value: BigInt(Object.keys(metadata).length), type: GGUFValueType.UINT64 },
        ...metadata
    } as GGUFTypedMetadata;
    return serializeGgufMetadata(typedMetadata, { alignment: 1 });
}

/** gguf_tensor_info: name, n_dims, dims (ggml order), type, data offset. */
function tensorInfo({ plan, offset }: PlacedTensor): Uint8Array {
    const name = new TextEncoder().encode(plan.name);
    const bytes = new Uint8Array(8 + name.length + 4 + 8 * plan.shape.length + 4 + 8);
    const view = new DataView(bytes.buffer);
    let at = 0;
    view.setBigUint64(at, BigInt(name.length), true);
    bytes.set(name, (at += 8));
    view.setUint32((at += name.length), plan.shape.length, true);
    at += 4;
    for (const dim of plan.shape) {
        view.setBigUint64(at, BigInt(dim), true);
        at += 8;
    }
    view.setUint32(at, plan.type, true);
    view.setBigUint64(at + 4, BigInt(offset), true);
    return bytes;
}

import { GGUFValueType, type MetadataValue } from "@huggingface/gguf";

/** One GGUF key's value with its wire type, in the shape `serializeGgufMetadata` expects. */
export interface MetadataEntry {
    readonly value: MetadataValue;
    readonly type: GGUFValueType;
    readonly subType?: GGUFValueType;
}

export type MetadataEntries = Record<string, MetadataEntry>;

// llama.cpp checks wire types strictly (e.g. a uint32 key written as int32 fails to load), so
// every value is built through one of these.
export const u32 = (value: number): MetadataEntry => ({ value, type: GGUFValueType.UINT32 });
export const f32 = (value: number): MetadataEntry => ({ value, type: GGUFValueType.FLOAT32 });
export const bool = (value: boolean): MetadataEntry => ({ value, type: GGUFValueType.BOOL });
export const str = (value: string): MetadataEntry => ({ value, type: GGUFValueType.STRING });

const array
    = <T extends number | string | boolean>(subType: GGUFValueType) =>
        (values: readonly T[]): MetadataEntry => ({ value: [...values], type: GGUFValueType.ARRAY, subType });

export const strArray = array<string>(GGUFValueType.STRING);
export const i32Array = array<number>(GGUFValueType.INT32);
export const f32Array = array<number>(GGUFValueType.FLOAT32);
export const boolArray = array<boolean>(GGUFValueType.BOOL);

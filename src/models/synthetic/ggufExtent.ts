import { open } from "node:fs/promises";
import { alignUp } from "./ggufLayout.js";
import { GgmlType, ggmlTensorBytes } from "./ggmlTypes.js";

/** What a GGUF file's own header says about its size, next to the size it really has. */
export interface GgufExtent {
    readonly tensorCount: number;
    /** tensor data bytes, padded after the last tensor as this writer pads them */
    readonly dataBytes: number;
    /** header plus data: the size the file must have to be complete */
    readonly expectedFileBytes: number;
    readonly actualFileBytes: number;
}

/** Thrown inside the walk when the bytes read so far end mid-header. */
class NeedMoreBytes extends Error {}

const knownTypes = new Set<number>(Object.values(GgmlType).filter((value) => typeof value === "number"));

/**
 * Reads a GGUF file's header just far enough to know its extent: metadata values are skipped
 * by their lengths, never decoded, which takes milliseconds where a full parse of ~300k
 * tokenizer strings takes most of a second. Returns undefined for anything that is not a GGUF v3
 * file of tensor types this writer produces (such a file is simply rewritten).
 */
export async function readGgufExtent(path: string): Promise<GgufExtent | undefined> {
    const file = await open(path, "r").catch(() => undefined);
    if (file === undefined) return undefined;
    try {
        const actualFileBytes = (await file.stat()).size;
        // the synthetic headers are ~6 MB (mostly the vocabulary); read more only if needed
        for (let length = 8 << 20; ; length *= 2) {
            const bytes = Buffer.alloc(Math.min(length, actualFileBytes));
            const { bytesRead } = await file.read(bytes, 0, bytes.length, 0);
            try {
                return walkHeader(bytes.subarray(0, bytesRead), actualFileBytes);
            } catch (error) {
                if (!(error instanceof NeedMoreBytes) || bytesRead >= actualFileBytes) return undefined;
            }
        }
    } finally {
        await file.close();
    }
}

function walkHeader(bytes: Buffer, actualFileBytes: number): GgufExtent | undefined {
    let at = 0;
    const need = (count: number): number => {
        if (at + count > bytes.length) throw new NeedMoreBytes();
        const start = at;
        at += count;
        return start;
    };
    const u32 = (): number => bytes.readUInt32LE(need(4));
    const u64 = (): number => Number(bytes.readBigUInt64LE(need(8)));
    const skipString = (): void => void need(u64());
    // GGUFValueType → fixed size in bytes (strings and arrays are handled separately)
    const fixedSizes: Readonly<Record<number, number>> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
    const skipValue = (type: number): void => {
        if (type === 8) return skipString();
        if (type === 9) {
            const elementType = u32();
            const count = u64();
            const size = fixedSizes[elementType];
            if (size !== undefined) need(size * count);
            else for (let i = 0; i < count; i++) skipValue(elementType);
            return;
        }
        const size = fixedSizes[type];
        if (size === undefined) throw new Error(`unknown GGUF value type ${type}`);
        need(size);
    };

    const magic = bytes.toString("latin1", need(4), 4);
    if (magic !== "GGUF" || u32() !== 3) return undefined;
    const tensorCount = u64();
    const kvCount = u64();
    for (let i = 0; i < kvCount; i++) {
        skipString();
        skipValue(u32());
    }
    let dataEnd = 0;
    for (let i = 0; i < tensorCount; i++) {
        skipString();
        const shape = Array.from({ length: u32() }, u64);
        const type = u32();
        const offset = u64();
        if (!knownTypes.has(type)) return undefined;
        dataEnd = Math.max(dataEnd, offset + ggmlTensorBytes(type as GgmlType, shape));
    }
    const dataBytes = alignUp(dataEnd);
    return { tensorCount, dataBytes, expectedFileBytes: alignUp(at) + dataBytes, actualFileBytes };
}

import { createCipheriv, createHash, type Cipher } from "node:crypto";

/**
 * A deterministic stream of random bytes: the AES-256-CTR keystream under a key derived from
 * `seed`. AES is used as a PRNG because it runs natively (AES-NI) at gigabytes per second,
 * which a JavaScript PRNG cannot match for multi-gigabyte models, and its output is the same on
 * every platform and Node version, so a seed always yields the same file.
 */
export class SeededRandomBytes {
    private readonly keystream: Cipher;
    private zeroes = Buffer.alloc(0);

    constructor(seed: string) {
        const key = createHash("sha256").update(seed).digest();
        this.keystream = createCipheriv("aes-256-ctr", key, Buffer.alloc(16));
    }

    /** The next `length` bytes of the stream, in a fresh buffer whose start is 4-byte aligned. */
    next(length: number): Uint8Array {
        if (this.zeroes.length < length) this.zeroes = Buffer.alloc(length);
        const bytes = this.keystream.update(this.zeroes.subarray(0, length));
        // small outputs may come from Node's shared buffer pool at an arbitrary offset; callers
        // view the bytes as Uint32/Float32 arrays, which need 4-byte alignment
        if (bytes.byteOffset % 4 === 0) return bytes;
        return new Uint8Array(bytes);
    }
}

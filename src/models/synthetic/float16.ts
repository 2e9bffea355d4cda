const scratch = new DataView(new ArrayBuffer(4));

/**
 * Converts a float32 to IEEE half-precision bits (round to nearest even). Used for the per-block
 * scales of quantized tensors, which are always small normal numbers, but handles the full range
 * so a bad scale cannot silently become garbage.
 */
export function float32ToFloat16Bits(value: number): number {
    scratch.setFloat32(0, value);
    const bits = scratch.getUint32(0);
    const sign = (bits >>> 16) & 0x8000;
    const exponent = (bits >>> 23) & 0xff;
    const mantissa = bits & 0x7fffff;

    if (exponent === 0xff) return sign | 0x7c00 | (mantissa !== 0 ? 0x200 : 0); // inf / NaN
    const halfExponent = exponent - 127 + 15;
    if (halfExponent >= 0x1f) return sign | 0x7c00; // overflow → inf
    if (halfExponent <= 0) {
        if (halfExponent < -10) return sign; // underflow → signed zero
        // subnormal half: shift the implicit leading 1 into the mantissa
        const fullMantissa = mantissa | 0x800000;
        const shift = 14 - halfExponent;
        const half = fullMantissa >>> shift;
        const remainder = fullMantissa & ((1 << shift) - 1);
        const halfway = 1 << (shift - 1);
        const roundUp = remainder > halfway || (remainder === halfway && (half & 1) === 1);
        return sign | (half + (roundUp ? 1 : 0));
    }
    const half = (halfExponent << 10) | (mantissa >>> 13);
    const remainder = mantissa & 0x1fff;
    const roundUp = remainder > 0x1000 || (remainder === 0x1000 && (half & 1) === 1);
    // a carry out of the mantissa correctly bumps the exponent (up to inf)
    return sign | (half + (roundUp ? 1 : 0));
}

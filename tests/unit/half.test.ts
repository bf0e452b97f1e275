import { describe, expect, it } from 'vitest';
import {
  baseBytes,
  bf16ToF32,
  checkBaseDtype,
  f16ToF32,
  f32ToBf16Bits,
  f32ToF16Bits,
  packHalves,
  roundToDtype,
  unpackHalves,
} from '../../src/engine/cpu/half';

// 16-bit storage of frozen base weights (src/engine/cpu/half.ts): the CPU side of the packed-weight kernels.

const bitsOf = (x: number) => new Uint32Array(Float32Array.of(x).buffer)[0];

describe('f16 / bf16 rounding and packing', () => {
  it('every finite f16 and every bf16 value round-trips through f32 bit for bit', () => {
    for (let h = 0; h < 65536; h++) {
      const e = (h >> 10) & 0x1f;
      if (e !== 31) expect(f32ToF16Bits(f16ToF32(h)), `f16 0x${h.toString(16)}`).toBe(h);
      if (((h >> 7) & 0xff) !== 0xff) expect(f32ToBf16Bits(bf16ToF32(h)), `bf16 0x${h.toString(16)}`).toBe(h);
    }
  });

  it('rounds to nearest with ties to even, subnormals included; overflow is ±∞, NaN stays NaN', () => {
    // 1 + 2^-11 is halfway between f16 1 and 1 + 2^-10: ties to the even mantissa (1); just above rounds up
    expect(f32ToF16Bits(1 + 2 ** -11)).toBe(0x3c00);
    expect(f32ToF16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(f32ToF16Bits(1 + 2 ** -11 + 2 ** -20)).toBe(0x3c01);
    // subnormal halves: 2^-25 is half the smallest one (ties to 0), 3·2^-25 rounds to 2·2^-24
    expect(f32ToF16Bits(2 ** -25)).toBe(0);
    expect(f32ToF16Bits(3 * 2 ** -25)).toBe(2);
    expect(f32ToF16Bits(-(2 ** -24))).toBe(0x8001);
    expect(f32ToF16Bits(65520)).toBe(0x7c00); // rounds past the largest half (65504)
    expect(f32ToF16Bits(65519)).toBe(0x7bff);
    expect(Number.isNaN(f16ToF32(f32ToF16Bits(Number.NaN)))).toBe(true);
    // bf16 keeps the top 16 bits: 1 + 2^-8 ties to 1, 1 + 3·2^-8 to 1 + 2^-6
    expect(f32ToBf16Bits(1 + 2 ** -8)).toBe(0x3f80);
    expect(f32ToBf16Bits(1 + 3 * 2 ** -8)).toBe(0x3f82);
    expect(f32ToBf16Bits(3.4e38)).toBe(0x7f80);
    expect(Number.isNaN(bf16ToF32(f32ToBf16Bits(Number.NaN)))).toBe(true);
  });

  it('packs two halves per word (even element low) and unpacks to the rounded values', () => {
    const v = Float32Array.of(1, -2, 0.1, 3.14159, 1e-6);
    const w = packHalves(v, 'f16');
    expect(w.length).toBe(3);
    expect(w[0]).toBe((0x3c00 | (0xc000 << 16)) >>> 0);
    expect(w[2] >>> 16).toBe(0);
    const back = unpackHalves(w, v.length, 'f16');
    expect(Array.from(back)).toEqual(Array.from(roundToDtype(v, 'f16')));
    expect(back[2]).not.toBe(v[2]);
    expect(Math.abs(back[2] - 0.1)).toBeLessThanOrEqual(2 ** -14 / 2);
    const b = unpackHalves(packHalves(v, 'bf16'), v.length, 'bf16');
    for (let i = 0; i < v.length; i++) expect(bitsOf(b[i]) & 0xffff).toBe(0);
    expect(roundToDtype(v, 'f32')).toBe(v);
    expect(baseBytes(5, 'f32')).toBe(20);
    expect(baseBytes(5, 'bf16')).toBe(12);
    expect(() => unpackHalves(w, 7, 'f16')).toThrow(/fewer than 7/);
    expect(checkBaseDtype('bf16', 'x')).toBe('bf16');
    expect(() => checkBaseDtype('fp16', 'lab.lora_base_dtype')).toThrow(
      /lab.lora_base_dtype: .*f32, f16, bf16.*"fp16"/,
    );
  });
});

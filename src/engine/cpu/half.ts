/**
 * 16-bit storage of frozen base weights: f16 (IEEE half) and bf16 (the top half of an f32), rounded to nearest
 * with ties to even, two values per u32 word (element 2j in the low half, 2j+1 in the high half: what WGSL's
 * `unpack2x16float` and a 16-bit shift read). Widening back is exact, so a weight stored in a file as f16 or
 * bf16 survives the round trip bit for bit. These are the CPU references of the packed-weight kernel variants.
 */

/** How the frozen base weights are stored on the GPU: f32 (exact) or packed 16-bit halves. */
export type BaseDtype = 'f32' | 'f16' | 'bf16';
export const BASE_DTYPES: readonly BaseDtype[] = ['f32', 'f16', 'bf16'];

/** The dtype code the kernels read in their uniforms (0 f32, 1 f16, 2 bf16). */
export function dtypeCode(dtype: BaseDtype): number {
  return BASE_DTYPES.indexOf(dtype);
}

export function checkBaseDtype(value: unknown, where: string): BaseDtype {
  if (typeof value === 'string' && (BASE_DTYPES as readonly string[]).includes(value))
    return value as BaseDtype;
  throw new Error(
    `${where}: base dtype must be one of ${BASE_DTYPES.join(', ')}, got ${JSON.stringify(value)}`,
  );
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE half → f32 value. */
export function f16ToF32(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? Number.NaN : s * Number.POSITIVE_INFINITY;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** `keep` = bits >>> shift, rounded to nearest, ties to even, on the dropped bits. */
function roundShift(bits: number, shift: number): number {
  const keep = bits >>> shift;
  const rem = bits - keep * 2 ** shift;
  const half = 2 ** (shift - 1);
  return rem > half || (rem === half && (keep & 1) === 1) ? keep + 1 : keep;
}

/** f32 value → IEEE half bits (nearest, ties to even; overflow → ±∞, NaN stays NaN). */
export function f32ToF16Bits(x: number): number {
  f32[0] = x;
  const b = u32[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  const mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    // subnormal half: the implicit bit joins the mantissa, 14 − e bits are dropped (a carry makes it normal)
    return sign | roundShift(mant | 0x800000, 14 - e);
  }
  // a carry out of the mantissa bumps the exponent (up to ∞), which is the right rounding
  return sign | roundShift((e << 23) | mant, 13);
}

/** f32 value → bf16 bits (nearest, ties to even; NaN stays NaN). */
export function f32ToBf16Bits(x: number): number {
  f32[0] = x;
  const b = u32[0];
  if ((b & 0x7f800000) === 0x7f800000 && (b & 0x7fffff) !== 0) return ((b >>> 16) & 0x8000) | 0x7fc0;
  return roundShift(b, 16);
}

export function bf16ToF32(h: number): number {
  u32[0] = (h & 0xffff) << 16;
  return f32[0];
}

/** The values packed two per u32 word (ceil(n / 2) words; an odd tail's high half is 0). */
export function packHalves(values: Float32Array, dtype: Exclude<BaseDtype, 'f32'>): Uint32Array {
  const words = new Uint32Array(Math.ceil(values.length / 2));
  const halves = new Uint16Array(words.buffer, 0, values.length);
  const bits = dtype === 'f16' ? f32ToF16Bits : f32ToBf16Bits;
  for (let i = 0; i < values.length; i++) halves[i] = bits(values[i]);
  return words;
}

/** The first `n` values of packed words, widened to f32 (exact). */
export function unpackHalves(words: Uint32Array, n: number, dtype: Exclude<BaseDtype, 'f32'>): Float32Array {
  if (words.length * 2 < n)
    throw new Error(`unpackHalves: ${words.length} words hold fewer than ${n} values`);
  const halves = new Uint16Array(words.buffer, words.byteOffset, n);
  const out = new Float32Array(n);
  const widen = dtype === 'f16' ? f16ToF32 : bf16ToF32;
  for (let i = 0; i < n; i++) out[i] = widen(halves[i]);
  return out;
}

/** The values as the packed storage holds them: f32 unchanged, else rounded to the 16-bit dtype. */
export function roundToDtype(values: Float32Array, dtype: BaseDtype): Float32Array {
  if (dtype === 'f32') return values;
  return unpackHalves(packHalves(values, dtype), values.length, dtype);
}

/** Bytes of a buffer holding `n` values in `dtype` (packed halves round up to whole u32 words). */
export function baseBytes(n: number, dtype: BaseDtype): number {
  return dtype === 'f32' ? n * 4 : Math.ceil(n / 2) * 4;
}

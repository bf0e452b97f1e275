/**
 * Float formats the upstream trainers compute in. verl runs its advantage and loss math in float32 torch
 * tensors; Agent Lightning's RolloutAdapter creates `token_level_scores` in bfloat16, so on that path the
 * advantage estimator and the rollout normalisation round every op to bf16. These helpers reproduce both.
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/**
 * Rounds a number to the nearest bfloat16 value (round-to-nearest-even on the top 16 bits of its float32
 * encoding), returned as a plain number. This is what torch does when it stores a float32 result in a bf16
 * tensor. NaN stays NaN; ±Infinity stays.
 */
export function bf16(x: number): number {
  f32[0] = x;
  const bits = u32[0];
  if ((bits & 0x7f800000) === 0x7f800000) return f32[0]; // NaN / Inf
  const rounded = (bits + 0x7fff + ((bits >>> 16) & 1)) & 0xffff0000;
  u32[0] = rounded >>> 0;
  return f32[0];
}

/** The dtypes upstream tensors take on the paths we reproduce. */
export type FloatDType = 'float32' | 'bfloat16';

/** Rounding function for a dtype: every arithmetic op result is stored through it. */
export function rounder(dtype: FloatDType): (x: number) => number {
  return dtype === 'bfloat16' ? bf16 : Math.fround;
}

/** An error that mirrors where upstream raises; `kind` is the upstream exception class. */
export class UpstreamError extends Error {
  constructor(
    readonly kind: 'ValueError' | 'RuntimeError' | 'NotImplementedError' | 'AssertionError' | 'TypeError',
    message: string,
  ) {
    super(message);
    this.name = kind;
  }
}

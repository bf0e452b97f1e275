/**
 * bfloat16 rounding. Agent Lightning builds `token_level_scores` with `torch.tensor(rewards, dtype=torch.bfloat16)`;
 * torch converts each Python float to float32 and then to bf16 with round-to-nearest-even on the upper 16 bits
 * (c10/util/BFloat16.h `round_to_nearest_even`). Emulating that reproduces the rewards the trainer sees.
 */
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function toBf16(x: number): number {
  f32[0] = x;
  if (Number.isNaN(f32[0])) return Number.NaN;
  const bits = u32[0];
  const lsb = (bits >>> 16) & 1;
  u32[0] = ((bits + 0x7fff + lsb) & 0xffff0000) >>> 0;
  return f32[0];
}

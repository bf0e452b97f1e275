/**
 * Rotary position embeddings (Su et al. 2021) in the "rotate half" layout transformers uses for the Llama
 * family: for each head's D values, pair i with i + D/2 and rotate the pair by angle pos·invFreq[i]:
 *   out[i]       = x[i]·cos − x[i+D/2]·sin
 *   out[i+D/2]   = x[i+D/2]·cos + x[i]·sin
 * The rotation is orthogonal, so the backward is the rotation by the negative angle.
 */

/** cos and sin (P · D/2) for positions 0..P-1, computed as transformers does: f32 angle, then cos/sin. */
export function ropeTables(invFreq: Float64Array, P: number): { cos: Float32Array; sin: Float32Array } {
  const half = invFreq.length;
  const cos = new Float32Array(P * half);
  const sin = new Float32Array(P * half);
  for (let p = 0; p < P; p++)
    for (let i = 0; i < half; i++) {
      const a = Math.fround(Math.fround(invFreq[i]) * p);
      cos[p * half + i] = Math.cos(a);
      sin[p * half + i] = Math.sin(a);
    }
  return { cos, sin };
}

/**
 * In place on x (N rows of `heads` heads of D): rotates row n by position pos[n]. `inverse` rotates by the
 * negative angle (the backward).
 */
export function ropeApplyCpu(
  x: Float32Array,
  pos: Int32Array,
  cos: Float32Array,
  sin: Float32Array,
  N: number,
  heads: number,
  D: number,
  inverse = false,
): void {
  const half = D / 2;
  const sgn = inverse ? -1 : 1;
  for (let n = 0; n < N; n++) {
    const t = pos[n] * half;
    for (let h = 0; h < heads; h++) {
      const o = (n * heads + h) * D;
      for (let i = 0; i < half; i++) {
        const c = cos[t + i];
        const s = sgn * sin[t + i];
        const a = x[o + i];
        const b = x[o + i + half];
        x[o + i] = a * c - b * s;
        x[o + i + half] = b * c + a * s;
      }
    }
  }
}

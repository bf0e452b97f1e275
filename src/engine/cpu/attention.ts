/**
 * Reference for shaders/attention.wgsl and attention_backward.wgsl: causal multi-head self-attention.
 * qkv rows are [q | k | v] (3C); T rows per sequence; queries t0 .. t0+nq−1 attend to keys 0..t.
 * att: (B, H, nq, T) probabilities, out: (B, nq, C).
 */
export function attentionForwardCpu(
  qkv: Float32Array,
  att: Float32Array,
  out: Float32Array,
  B: number,
  T: number,
  C: number,
  H: number,
  t0 = 0,
  nq = T,
): void {
  const hs = C / H;
  const C3 = 3 * C;
  const scale = 1 / Math.sqrt(hs);
  const scores = new Float64Array(T);
  const acc = new Float64Array(hs);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++)
      for (let qi = 0; qi < nq; qi++) {
        const t = t0 + qi;
        const qBase = (b * T + t) * C3 + h * hs;
        let mx = Number.NEGATIVE_INFINITY;
        for (let s = 0; s <= t; s++) {
          const kBase = (b * T + s) * C3 + C + h * hs;
          let dot = 0;
          for (let d = 0; d < hs; d++) dot += qkv[qBase + d] * qkv[kBase + d];
          scores[s] = dot * scale;
          mx = Math.max(mx, scores[s]);
        }
        let sum = 0;
        for (let s = 0; s <= t; s++) {
          scores[s] = Math.exp(scores[s] - mx);
          sum += scores[s];
        }
        const aBase = ((b * H + h) * nq + qi) * T;
        for (let s = 0; s <= t; s++) att[aBase + s] = scores[s] / sum;
        att.fill(0, aBase + t + 1, aBase + T);
        // out = Σ_s att_s · v_s, one value row at a time (rows of qkv are contiguous)
        acc.fill(0);
        for (let s = 0; s <= t; s++) {
          const w = att[aBase + s];
          const vBase = (b * T + s) * C3 + 2 * C + h * hs;
          for (let d = 0; d < hs; d++) acc[d] += w * qkv[vBase + d];
        }
        const oBase = (b * nq + qi) * C + h * hs;
        for (let d = 0; d < hs; d++) out[oBase + d] = acc[d];
      }
}

/** Training-case backward (t0 = 0, nq = T): writes dqkv (B, T, 3C) from dout (B, T, C). */
export function attentionBackwardCpu(
  qkv: Float32Array,
  att: Float32Array,
  dout: Float32Array,
  dqkv: Float32Array,
  B: number,
  T: number,
  C: number,
  H: number,
): void {
  const hs = C / H;
  const C3 = 3 * C;
  const scale = 1 / Math.sqrt(hs);
  dqkv.fill(0);
  const dz = new Float64Array(T);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++)
      for (let t = 0; t < T; t++) {
        const aBase = ((b * H + h) * T + t) * T;
        const doBase = (b * T + t) * C + h * hs;
        let dsum = 0;
        for (let s = 0; s <= t; s++) {
          const vBase = (b * T + s) * C3 + 2 * C + h * hs;
          let dp = 0;
          for (let d = 0; d < hs; d++) dp += dout[doBase + d] * qkv[vBase + d];
          dz[s] = dp;
          dsum += att[aBase + s] * dp;
        }
        for (let s = 0; s <= t; s++) dz[s] = att[aBase + s] * (dz[s] - dsum);
        const qBase = (b * T + t) * C3 + h * hs;
        for (let s = 0; s <= t; s++) {
          const kBase = (b * T + s) * C3 + C + h * hs;
          for (let d = 0; d < hs; d++) {
            dqkv[qBase + d] += scale * dz[s] * qkv[kBase + d];
            dqkv[kBase + d] += scale * dz[s] * qkv[qBase + d];
            dqkv[kBase + C + d] += att[aBase + s] * dout[doBase + d];
          }
        }
      }
}

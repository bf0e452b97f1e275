/**
 * RMSNorm (Zhang & Sennrich 2019) as the Llama family uses it: y = x / √(mean(x²) + eps) · w over rows of C,
 * the statistic in f32 (transformers computes it in float32 whatever the weights' dtype). The forward saves
 * the reciprocal RMS per row for the backward.
 */

/** y (N·C) = rmsnorm(x) · w; rstd (N) saved. */
export function rmsnormForwardCpu(
  x: Float32Array,
  w: Float32Array,
  y: Float32Array,
  rstd: Float32Array,
  N: number,
  C: number,
  eps: number,
): void {
  for (let n = 0; n < N; n++) {
    const o = n * C;
    let ss = 0;
    for (let c = 0; c < C; c++) ss += x[o + c] * x[o + c];
    const r = Math.fround(1 / Math.sqrt(Math.fround(ss / C) + eps));
    rstd[n] = r;
    for (let c = 0; c < C; c++) y[o + c] = Math.fround(x[o + c] * r) * w[c];
  }
}

/**
 * Backward: dx (=|+=) r·(dy·w) − x·r³/C·Σ(dy·w·x); dw += Σ_n dy·x·r. `accumulateDx` adds into dx (a residual
 * stream's gradient).
 */
export function rmsnormBackwardCpu(
  x: Float32Array,
  w: Float32Array,
  rstd: Float32Array,
  dy: Float32Array,
  dx: Float32Array,
  dw: Float32Array,
  N: number,
  C: number,
  accumulateDx: boolean,
): void {
  for (let n = 0; n < N; n++) {
    const o = n * C;
    const r = rstd[n];
    let dot = 0;
    for (let c = 0; c < C; c++) {
      dot += dy[o + c] * w[c] * x[o + c];
      dw[c] += dy[o + c] * x[o + c] * r;
    }
    const k = (dot * r * r * r) / C;
    for (let c = 0; c < C; c++) {
      const g = r * dy[o + c] * w[c] - x[o + c] * k;
      dx[o + c] = accumulateDx ? dx[o + c] + g : g;
    }
  }
}

/**
 * Reference for shaders/layernorm.wgsl and layernorm_backward.wgsl (LayerNorm, Ba et al. 2016).
 * y = (x − μ)·rstd·w + b; stats holds (μ, rstd) per row.
 */
export function layernormForwardCpu(
  x: Float32Array,
  w: Float32Array,
  b: Float32Array,
  y: Float32Array,
  stats: Float32Array,
  N: number,
  C: number,
  eps = 1e-5,
): void {
  for (let n = 0; n < N; n++) {
    const base = n * C;
    let mean = 0;
    for (let c = 0; c < C; c++) mean += x[base + c];
    mean /= C;
    let variance = 0;
    for (let c = 0; c < C; c++) variance += (x[base + c] - mean) ** 2;
    variance /= C;
    const rstd = 1 / Math.sqrt(variance + eps);
    for (let c = 0; c < C; c++) y[base + c] = (x[base + c] - mean) * rstd * w[c] + b[c];
    stats[2 * n] = mean;
    stats[2 * n + 1] = rstd;
  }
}

/** dx += rstd·(g − mean(g) − x̂·mean(g·x̂)), g = dy·w;  dw += Σ dy·x̂;  db += Σ dy. */
export function layernormBackwardCpu(
  x: Float32Array,
  w: Float32Array,
  stats: Float32Array,
  dy: Float32Array,
  dx: Float32Array,
  dw: Float32Array,
  db: Float32Array,
  N: number,
  C: number,
): void {
  for (let n = 0; n < N; n++) {
    const base = n * C;
    const mean = stats[2 * n];
    const rstd = stats[2 * n + 1];
    let gMean = 0;
    let gxMean = 0;
    for (let c = 0; c < C; c++) {
      const g = dy[base + c] * w[c];
      const xh = (x[base + c] - mean) * rstd;
      gMean += g;
      gxMean += g * xh;
      dw[c] += dy[base + c] * xh;
      db[c] += dy[base + c];
    }
    gMean /= C;
    gxMean /= C;
    for (let c = 0; c < C; c++) {
      const g = dy[base + c] * w[c];
      const xh = (x[base + c] - mean) * rstd;
      dx[base + c] += rstd * (g - gMean - xh * gxMean);
    }
  }
}

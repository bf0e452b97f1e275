/** The SwiGLU gate (Shazeer 2020): a = silu(g)·u with silu(g) = g·σ(g), elementwise. */

export function swigluForwardCpu(g: Float32Array, u: Float32Array, a: Float32Array): void {
  for (let i = 0; i < a.length; i++) {
    const s = 1 / (1 + Math.exp(-g[i]));
    a[i] = g[i] * s * u[i];
  }
}

/** dg = da·u·σ(g)(1 + g(1 − σ(g))), du = da·silu(g). */
export function swigluBackwardCpu(
  g: Float32Array,
  u: Float32Array,
  da: Float32Array,
  dg: Float32Array,
  du: Float32Array,
): void {
  for (let i = 0; i < da.length; i++) {
    const s = 1 / (1 + Math.exp(-g[i]));
    du[i] = da[i] * g[i] * s;
    dg[i] = da[i] * u[i] * s * (1 + g[i] * (1 - s));
  }
}

/** Reference for shaders/gelu.wgsl: GELU, tanh approximation (Hendrycks & Gimpel 2016). */
const S = Math.sqrt(2 / Math.PI);
const A = 0.044715;

export function geluForwardCpu(x: Float32Array, y: Float32Array): void {
  for (let i = 0; i < x.length; i++) {
    const v = x[i];
    y[i] = 0.5 * v * (1 + Math.tanh(S * (v + A * v * v * v)));
  }
}

/** dx = dy · gelu'(x). */
export function geluBackwardCpu(x: Float32Array, dy: Float32Array, dx: Float32Array): void {
  for (let i = 0; i < x.length; i++) {
    const v = x[i];
    const th = Math.tanh(S * (v + A * v * v * v));
    dx[i] = dy[i] * (0.5 * (1 + th) + 0.5 * v * (1 - th * th) * S * (1 + 3 * A * v * v));
  }
}

/** Reference for shaders/embedding.wgsl: token + position embeddings and their gradients. */

/** out (N, C), n = b·T + t: wte[tokens[n]] + wpe[pos0 + t]. */
export function embeddingForwardCpu(
  tokens: Uint32Array,
  wte: Float32Array,
  wpe: Float32Array,
  out: Float32Array,
  T: number,
  C: number,
  pos0 = 0,
): void {
  const V = wte.length / C;
  for (let n = 0; n < tokens.length; n++) {
    const tok = Math.min(tokens[n], V - 1);
    const t = pos0 + (n % T);
    for (let c = 0; c < C; c++) out[n * C + c] = wte[tok * C + c] + wpe[t * C + c];
  }
}

/** dwte[v] += Σ_{tokens[n]=v} dout[n];  dwpe[t] += Σ_b dout[b·T + t]. */
export function embeddingBackwardCpu(
  tokens: Uint32Array,
  dout: Float32Array,
  dwte: Float32Array,
  dwpe: Float32Array,
  T: number,
  C: number,
): void {
  for (let n = 0; n < tokens.length; n++) {
    const t = n % T;
    for (let c = 0; c < C; c++) {
      dwte[tokens[n] * C + c] += dout[n * C + c];
      dwpe[t * C + c] += dout[n * C + c];
    }
  }
}

/**
 * The matmul reference the WGSL `matmul` kernel (and the CPU engine's fast path, matmulFast.ts) is held to.
 * Row-major f32; accumulates in f64 so the reference is the more exact side of any comparison.
 */
export type MatmulMode = 'nn' | 'nt' | 'tn';

/** Refuses operands shorter than the (M,K), (K,N) and (M,N) a matmul of `mode` reads and writes. */
export function checkMatmulOperands(...[mode, a, b, c, M, N, K]: Parameters<typeof matmulModeCpu>): void {
  if (a.length < M * K) throw new Error(`matmul ${mode}: A has ${a.length} values, needs ${M * K}`);
  if (b.length < K * N) throw new Error(`matmul ${mode}: B has ${b.length} values, needs ${K * N}`);
  if (c.length < M * N) throw new Error(`matmul ${mode}: C has ${c.length} values, needs ${M * N}`);
}

/**
 * The general form of `shaders/matmul.wgsl`: c (=|+=) op(a) · op(b) (+ bias), all arrays already sliced to
 * the operands. nn: a (M,K), b (K,N). nt: a (M,K), b stored (N,K). tn: a stored (K,M), b (K,N).
 */
export function matmulModeCpu(
  mode: MatmulMode,
  a: Float32Array,
  b: Float32Array,
  c: Float32Array,
  M: number,
  N: number,
  K: number,
  opts: { bias?: Float32Array; accumulate?: boolean } = {},
): void {
  checkMatmulOperands(mode, a, b, c, M, N, K);
  const col = new Float64Array(K);
  for (let j = 0; j < N; j++) {
    for (let k = 0; k < K; k++) col[k] = mode === 'nt' ? b[j * K + k] : b[k * N + j];
    for (let i = 0; i < M; i++) {
      let acc = opts.bias ? opts.bias[j] : 0;
      if (mode === 'tn') for (let k = 0; k < K; k++) acc += a[k * M + i] * col[k];
      else {
        const base = i * K;
        for (let k = 0; k < K; k++) acc += a[base + k] * col[k];
      }
      c[i * N + j] = opts.accumulate ? c[i * N + j] + acc : acc;
    }
  }
}

/** out[j] (+)= Σ_i x[i·N + j]: the bias gradient (shaders/reduce.wgsl `colsum`). */
export function colsumCpu(x: Float32Array, M: number, N: number, out: Float32Array, accumulate = true): void {
  for (let j = 0; j < N; j++) {
    let acc = 0;
    for (let i = 0; i < M; i++) acc += x[i * N + j];
    out[j] = accumulate ? out[j] + acc : acc;
  }
}

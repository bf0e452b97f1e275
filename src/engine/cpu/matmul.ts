/**
 * C = A · B, row-major f32. The reference the WGSL `matmul` kernel is held to.
 * a: (M, K), b: (K, N) → (M, N). Accumulates in f64 so the reference is the more exact side of any comparison.
 */
export function matmulCpu(a: Float32Array, b: Float32Array, M: number, N: number, K: number): Float32Array {
  if (a.length !== M * K) throw new Error(`matmul: A has ${a.length} values, expected M*K = ${M * K}`);
  if (b.length !== K * N) throw new Error(`matmul: B has ${b.length} values, expected K*N = ${K * N}`);
  const c = new Float32Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let acc = 0;
      for (let k = 0; k < K; k++) acc += a[i * K + k] * b[k * N + j];
      c[i * N + j] = acc;
    }
  }
  return c;
}

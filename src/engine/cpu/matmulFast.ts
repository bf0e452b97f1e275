/**
 * The CPU engine's fast matmul: the same contract as `matmulModeCpu` (matmul.ts, the reference), computed by a
 * WebAssembly SIMD kernel (`gemm` of wasm/kernels.wat, loaded by simd.ts).
 * An 'nt' of few rows (M < NT_ROWS: a few tokens against (out, in) weights, where packing b would cost as much
 * as the product) runs on `gemm_nt`, which reads both row-major operands as copied, with no packing. Every
 * other product is reduced to `gemm`, c (M,N) = a (M,K) · b (K,N), on copies in the kernel's memory:
 *   a is copied as stored and read with strides (row-major (M,K) for 'nn' and 'nt', (K,M) for a small 'tn'
 *   a; a 'tn' a of 2^18 values or more is transposed into rows first, by the module's transpose);
 *   b is read in place when it is (K,N) with N a multiple of 8 ('nn', 'tn'), else packed into 8-column panels
 *   ('nt': by the module's transpose; N not a multiple of 8: zero columns pad the last panel).
 * The copies cost O(K·(M+N)) against the kernel's O(M·N·K); bias and accumulation are applied while the result
 * is copied back. Sums run in f32 (gemm: in k order; gemm_nt: four lanes of k mod 4, each in k order, then
 * added), so results are deterministic on one runtime and within f32
 * rounding of the reference (the relaxed-SIMD variant may fuse the multiply-add: still within that bound);
 * tests/unit/matmulFast.test.ts holds them to it. Where WebAssembly SIMD is missing, the reference runs.
 */
import { checkMatmulOperands, matmulModeCpu } from './matmul';
import { heap, simdKernels } from './simd';

/** Rows below which an 'nt' product runs on gemm_nt (packing b costs O(N·K), spread over M rows). */
export const NT_ROWS = 128;

/**
 * Same contract as `matmulModeCpu`: c (=|+=) op(a) · op(b) (+ bias). nn: a (M,K), b (K,N). nt: a (M,K), b
 * stored (N,K). tn: a stored (K,M), b (K,N). Arrays may be longer than their operands (views into flat
 * buffers); only the leading M·K, K·N and M·N values are used.
 */
export const matmulModeFast: typeof matmulModeCpu = (mode, a, b, c, M, N, K, opts = {}) => {
  checkMatmulOperands(mode, a, b, c, M, N, K);
  const g = simdKernels();
  if (!g) {
    matmulModeCpu(mode, a, b, c, M, N, K, opts);
    return;
  }
  if (M === 0 || N === 0) return;
  if (mode === 'nt' && M < NT_ROWS) {
    const f = heap(g, M * K + N * K + M * N);
    f.set(a.subarray(0, M * K), 0);
    f.set(b.subarray(0, N * K), M * K);
    const cOff = M * K + N * K;
    g.gemm_nt(M, N, K, 0, 4 * K, 4 * M * K, 4 * K, 4 * cOff, 4 * N);
    copyOut(f, cOff, N, c, M, N, opts);
    return;
  }
  const P = (N + 7) >> 3;
  const Np = 8 * P;
  const inPlace = mode !== 'nt' && Np === N;
  // a large 'tn' a is transposed into rows: strided reads over many rows would miss the TLB
  const aRows = mode === 'tn' && M * K >= 1 << 18;
  const aOff = 0;
  const bOff = aOff + M * K;
  const cOff = bOff + Np * K;
  const rawOff = cOff + M * Np;
  const f = heap(g, rawOff + (aRows ? M * K : mode === 'nt' ? N * K : 0));
  if (aRows) {
    f.set(a.subarray(0, M * K), rawOff);
    g.transpose(rawOff * 4, K, M, aOff * 4, K);
  } else f.set(a.subarray(0, M * K), aOff);
  if (inPlace) f.set(b.subarray(0, K * N), bOff);
  else {
    if (Np !== N) f.fill(0, bOff + (P - 1) * 8 * K, bOff + P * 8 * K);
    if (mode === 'nt') {
      // panel p = rows 8p .. 8p+7 of b (N,K), transposed to (K, 8)
      f.set(b.subarray(0, N * K), rawOff);
      for (let p = 0; p < P; p++)
        g.transpose((rawOff + 8 * p * K) * 4, Math.min(8, N - 8 * p), K, (bOff + 8 * p * K) * 4, 8);
    } else
      for (let k = 0; k < K; k++) {
        const src = k * N;
        const dst = bOff + 8 * k;
        for (let j = 0; j < N; j++) f[dst + (j >> 3) * 8 * K + (j & 7)] = b[src + j];
      }
  }
  const [ars, aks] = mode === 'tn' && !aRows ? [4, 4 * M] : [4 * K, 4];
  const [ps, ks] = inPlace ? [32, 4 * N] : [32 * K, 32];
  g.gemm(M, P, K, aOff * 4, ars, aks, bOff * 4, ps, ks, cOff * 4, M > Np ? 1 : 0);
  copyOut(f, cOff, Np, c, M, N, opts);
};

/** c (M,N) (=|+=) the kernel's result at f[cOff] (row stride ldc) (+ bias). */
function copyOut(
  f: Float32Array,
  cOff: number,
  ldc: number,
  c: Float32Array,
  M: number,
  N: number,
  opts: { bias?: Float32Array; accumulate?: boolean },
): void {
  const acc = opts.accumulate ?? false;
  const bias = opts.bias;
  if (!acc && !bias && ldc === N) {
    c.set(f.subarray(cOff, cOff + M * N));
    return;
  }
  for (let i = 0; i < M; i++) {
    const src = cOff + i * ldc;
    const dst = i * N;
    if (bias && acc) for (let j = 0; j < N; j++) c[dst + j] += f[src + j] + bias[j];
    else if (bias) for (let j = 0; j < N; j++) c[dst + j] = f[src + j] + bias[j];
    else if (acc) for (let j = 0; j < N; j++) c[dst + j] += f[src + j];
    else for (let j = 0; j < N; j++) c[dst + j] = f[src + j];
  }
}

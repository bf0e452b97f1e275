/**
 * The CPU engine's fast matmul: the same contract as `matmulModeCpu` (matmul.ts, the reference), computed
 * with 4×4 register blocking so that each loaded value feeds four multiply-adds. Every mode is reduced to the
 * one blocked kernel c (M,N) = a (M,K) · bᵀ with b stored (N,K) — rows of both operands are contiguous, so the
 * inner loop reads memory in order — by transposing an operand into scratch first (O(K·(M+N)) work against
 * O(M·N·K)); a single row (M < 4, e.g. one decode step) of 'nn' skips the transpose and adds rows of b instead.
 * Sums run in doubles (JS numbers), in a fixed order, so results are deterministic and within f32 rounding of
 * the reference; tests/unit/matmulFast.test.ts holds them to it.
 */
import type { MatmulMode } from './matmul';

let scratchA = new Float32Array(0);
let scratchB = new Float32Array(0);

function scratch(which: 'a' | 'b', n: number): Float32Array {
  if (which === 'a') {
    if (scratchA.length < n) scratchA = new Float32Array(Math.max(n, scratchA.length * 2));
    return scratchA;
  }
  if (scratchB.length < n) scratchB = new Float32Array(Math.max(n, scratchB.length * 2));
  return scratchB;
}

/** out (C, R) = xᵀ for x (R, C), in 16×16 tiles so both sides stay in cache. */
function transpose(x: Float32Array, R: number, C: number, out: Float32Array): void {
  const T = 16;
  for (let r0 = 0; r0 < R; r0 += T) {
    const r1 = Math.min(R, r0 + T);
    for (let c0 = 0; c0 < C; c0 += T) {
      const c1 = Math.min(C, c0 + T);
      for (let r = r0; r < r1; r++) {
        const src = r * C;
        for (let c = c0; c < c1; c++) out[c * R + r] = x[src + c];
      }
    }
  }
}

/** Stores one result: c = s (+ bias) or c += s (+ bias). */
function put(c: Float32Array, o: number, s: number, bias: Float32Array | undefined, j: number, acc: boolean) {
  const v = bias ? s + bias[j] : s;
  c[o] = acc ? c[o] + v : v;
}

/** c (M,N) (+)= a (M,K) · bᵀ (+ bias), b stored (N,K). */
function nt(
  a: Float32Array,
  b: Float32Array,
  c: Float32Array,
  M: number,
  N: number,
  K: number,
  bias: Float32Array | undefined,
  acc: boolean,
): void {
  const M4 = M - (M % 4);
  const N4 = N - (N % 4);
  for (let i = 0; i < M4; i += 4) {
    const a0 = i * K;
    const a1 = a0 + K;
    const a2 = a1 + K;
    const a3 = a2 + K;
    for (let j = 0; j < N4; j += 4) {
      const b0 = j * K;
      const b1 = b0 + K;
      const b2 = b1 + K;
      const b3 = b2 + K;
      let s00 = 0;
      let s01 = 0;
      let s02 = 0;
      let s03 = 0;
      let s10 = 0;
      let s11 = 0;
      let s12 = 0;
      let s13 = 0;
      let s20 = 0;
      let s21 = 0;
      let s22 = 0;
      let s23 = 0;
      let s30 = 0;
      let s31 = 0;
      let s32 = 0;
      let s33 = 0;
      for (let k = 0; k < K; k++) {
        const x0 = a[a0 + k];
        const x1 = a[a1 + k];
        const x2 = a[a2 + k];
        const x3 = a[a3 + k];
        const y0 = b[b0 + k];
        const y1 = b[b1 + k];
        const y2 = b[b2 + k];
        const y3 = b[b3 + k];
        s00 += x0 * y0;
        s01 += x0 * y1;
        s02 += x0 * y2;
        s03 += x0 * y3;
        s10 += x1 * y0;
        s11 += x1 * y1;
        s12 += x1 * y2;
        s13 += x1 * y3;
        s20 += x2 * y0;
        s21 += x2 * y1;
        s22 += x2 * y2;
        s23 += x2 * y3;
        s30 += x3 * y0;
        s31 += x3 * y1;
        s32 += x3 * y2;
        s33 += x3 * y3;
      }
      let o = i * N + j;
      put(c, o, s00, bias, j, acc);
      put(c, o + 1, s01, bias, j + 1, acc);
      put(c, o + 2, s02, bias, j + 2, acc);
      put(c, o + 3, s03, bias, j + 3, acc);
      o += N;
      put(c, o, s10, bias, j, acc);
      put(c, o + 1, s11, bias, j + 1, acc);
      put(c, o + 2, s12, bias, j + 2, acc);
      put(c, o + 3, s13, bias, j + 3, acc);
      o += N;
      put(c, o, s20, bias, j, acc);
      put(c, o + 1, s21, bias, j + 1, acc);
      put(c, o + 2, s22, bias, j + 2, acc);
      put(c, o + 3, s23, bias, j + 3, acc);
      o += N;
      put(c, o, s30, bias, j, acc);
      put(c, o + 1, s31, bias, j + 1, acc);
      put(c, o + 2, s32, bias, j + 2, acc);
      put(c, o + 3, s33, bias, j + 3, acc);
    }
    // right edge: 4 rows × 1 column
    for (let j = N4; j < N; j++) {
      const bj = j * K;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      for (let k = 0; k < K; k++) {
        const y = b[bj + k];
        s0 += a[a0 + k] * y;
        s1 += a[a1 + k] * y;
        s2 += a[a2 + k] * y;
        s3 += a[a3 + k] * y;
      }
      put(c, i * N + j, s0, bias, j, acc);
      put(c, (i + 1) * N + j, s1, bias, j, acc);
      put(c, (i + 2) * N + j, s2, bias, j, acc);
      put(c, (i + 3) * N + j, s3, bias, j, acc);
    }
  }
  // bottom edge: 1 row × 4 columns, then single dot products
  for (let i = M4; i < M; i++) {
    const ai = i * K;
    for (let j = 0; j < N4; j += 4) {
      const b0 = j * K;
      const b1 = b0 + K;
      const b2 = b1 + K;
      const b3 = b2 + K;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      for (let k = 0; k < K; k++) {
        const x = a[ai + k];
        s0 += x * b[b0 + k];
        s1 += x * b[b1 + k];
        s2 += x * b[b2 + k];
        s3 += x * b[b3 + k];
      }
      const o = i * N + j;
      put(c, o, s0, bias, j, acc);
      put(c, o + 1, s1, bias, j + 1, acc);
      put(c, o + 2, s2, bias, j + 2, acc);
      put(c, o + 3, s3, bias, j + 3, acc);
    }
    for (let j = N4; j < N; j++) {
      const bj = j * K;
      let s = 0;
      for (let k = 0; k < K; k++) s += a[ai + k] * b[bj + k];
      put(c, i * N + j, s, bias, j, acc);
    }
  }
}

/** c (M,N) (+)= a (M,K) · b (K,N) for a few rows: rows of b added four at a time (no transpose). */
function nnRows(
  a: Float32Array,
  b: Float32Array,
  c: Float32Array,
  M: number,
  N: number,
  K: number,
  bias: Float32Array | undefined,
  acc: boolean,
): void {
  const row = scratch('a', N);
  const K4 = K - (K % 4);
  for (let i = 0; i < M; i++) {
    const ai = i * K;
    row.fill(0, 0, N);
    for (let k = 0; k < K4; k += 4) {
      const x0 = a[ai + k];
      const x1 = a[ai + k + 1];
      const x2 = a[ai + k + 2];
      const x3 = a[ai + k + 3];
      const b0 = k * N;
      const b1 = b0 + N;
      const b2 = b1 + N;
      const b3 = b2 + N;
      for (let j = 0; j < N; j++) row[j] += x0 * b[b0 + j] + x1 * b[b1 + j] + x2 * b[b2 + j] + x3 * b[b3 + j];
    }
    for (let k = K4; k < K; k++) {
      const x = a[ai + k];
      const bk = k * N;
      for (let j = 0; j < N; j++) row[j] += x * b[bk + j];
    }
    for (let j = 0; j < N; j++) put(c, i * N + j, row[j], bias, j, acc);
  }
}

/**
 * Same contract as `matmulModeCpu`: c (=|+=) op(a) · op(b) (+ bias). nn: a (M,K), b (K,N). nt: a (M,K), b
 * stored (N,K). tn: a stored (K,M), b (K,N). Arrays may be longer than their operands (views into flat
 * buffers); only the leading M·K, K·N and M·N values are used.
 */
export function matmulModeFast(
  mode: MatmulMode,
  a: Float32Array,
  b: Float32Array,
  c: Float32Array,
  M: number,
  N: number,
  K: number,
  opts: { bias?: Float32Array; accumulate?: boolean } = {},
): void {
  if (a.length < M * K) throw new Error(`matmul ${mode}: A has ${a.length} values, needs ${M * K}`);
  if (b.length < K * N) throw new Error(`matmul ${mode}: B has ${b.length} values, needs ${K * N}`);
  if (c.length < M * N) throw new Error(`matmul ${mode}: C has ${c.length} values, needs ${M * N}`);
  const acc = opts.accumulate ?? false;
  const bias = opts.bias;
  if (mode === 'nt') nt(a, b, c, M, N, K, bias, acc);
  else if (mode === 'nn' && M < 4) nnRows(a, b, c, M, N, K, bias, acc);
  else if (mode === 'nn') {
    const bt = scratch('b', N * K);
    transpose(b, K, N, bt);
    nt(a, bt, c, M, N, K, bias, acc);
  } else {
    const at = scratch('a', M * K);
    const bt = scratch('b', N * K);
    transpose(a, K, M, at);
    transpose(b, K, N, bt);
    nt(at, bt, c, M, N, K, bias, acc);
  }
}

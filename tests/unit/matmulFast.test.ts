import { describe, expect, it } from 'vitest';
import { uniformF32 } from '../../src/core/random';
import { type MatmulMode, matmulModeCpu } from '../../src/engine/cpu/matmul';
import { matmulModeFast } from '../../src/engine/cpu/matmulFast';
import { fastKernel } from '../../src/engine/cpu/simd';

function maxAbs(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/**
 * The largest error an f32 sum of K products may make, relative to Σ|a||b| (the reference sums in doubles):
 * γ_K = K·u / (1 − K·u) with u = 2⁻²⁴ (Higham, Accuracy and Stability of Numerical Algorithms, §3.1), plus
 * one rounding of each stored result, plus the adds of c and the bias.
 */
function f32Bound(mode: MatmulMode, a: Float32Array, b: Float32Array, M: number, N: number, K: number) {
  const u = 2 ** -24;
  const gamma = (K * u) / (1 - K * u);
  let worst = 0;
  for (let i = 0; i < M; i++)
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++) {
        const x = mode === 'tn' ? a[k * M + i] : a[i * K + k];
        const y = mode === 'nt' ? b[j * K + k] : b[k * N + j];
        s += Math.abs(x * y);
      }
      worst = Math.max(worst, s);
    }
  return gamma * worst + 4 * u * (worst + 2);
}

describe('matmul reference', () => {
  it('multiplies a known 2×3 by 3×2 in every mode', () => {
    const a = Float32Array.from([1, 2, 3, 4, 5, 6]); // (2,3)
    const b = Float32Array.from([7, 8, 9, 10, 11, 12]); // (3,2)
    const c = new Float32Array(4);
    matmulModeCpu('nn', a, b, c, 2, 2, 3);
    expect([...c]).toEqual([58, 64, 139, 154]);
    // bᵀ stored (2,3) for nt; aᵀ stored (3,2) for tn
    matmulModeCpu('nt', a, Float32Array.from([7, 9, 11, 8, 10, 12]), c, 2, 2, 3);
    expect([...c]).toEqual([58, 64, 139, 154]);
    matmulModeCpu('tn', Float32Array.from([1, 4, 2, 5, 3, 6]), b, c, 2, 2, 3);
    expect([...c]).toEqual([58, 64, 139, 154]);
  });

  it('rejects operands that are too short, naming the operand', () => {
    expect(() =>
      matmulModeCpu('nn', new Float32Array(5), new Float32Array(6), new Float32Array(4), 2, 2, 3),
    ).toThrow('matmul nn: A has 5 values, needs 6');
    expect(() =>
      matmulModeFast('tn', new Float32Array(6), new Float32Array(5), new Float32Array(4), 2, 2, 3),
    ).toThrow('matmul tn: B has 5 values, needs 6');
  });
});

describe('fast CPU matmul vs the reference', () => {
  it('runs WebAssembly SIMD here (Node 20+ has it)', () => {
    expect(['simd', 'relaxed-simd']).toContain(fastKernel());
  });

  // Shapes not multiples of the 4×8 blocks, single rows (decode), 'nt' on both kernels (M below and above
  // NT_ROWS), both loop orders (M above and below the padded N), and a 'tn' a large enough to be transposed
  // into rows first (M·K ≥ 2^18).
  const shapes: [number, number, number][] = [
    [600, 24, 512],
    [5, 256, 300],
    [1, 1, 1],
    [1, 70, 37],
    [3, 5, 7],
    [19, 70, 37],
    [64, 192, 64],
    [130, 9, 33],
  ];
  for (const mode of ['nn', 'nt', 'tn'] as MatmulMode[])
    for (const [M, N, K] of shapes)
      for (const variant of ['plain', 'bias+accumulate'] as const)
        it(`${mode} (${M}×${N}×${K}, ${variant})`, () => {
          const a = uniformF32(M * K + 3, 1 + M);
          const b = uniformF32(K * N + 2, 2 + N);
          const bias = variant === 'plain' ? undefined : uniformF32(N, 3);
          const c0 = uniformF32(M * N, 4);
          const want = new Float32Array(c0);
          const got = new Float32Array(c0);
          const opts = { bias, accumulate: variant !== 'plain' };
          matmulModeCpu(mode, a, b, want, M, N, K, opts);
          matmulModeFast(mode, a, b, got, M, N, K, opts);
          // the reference sums in doubles, the kernel in f32: within the f32 error bound of the sum
          expect(maxAbs(got, want)).toBeLessThanOrEqual(f32Bound(mode, a, b, M, N, K));
        });

  it('is deterministic (same inputs, same bits)', () => {
    const a = uniformF32(37 * 29, 5);
    const b = uniformF32(29 * 41, 6);
    const x = new Float32Array(37 * 41);
    const y = new Float32Array(37 * 41);
    matmulModeFast('nn', a, b, x, 37, 41, 29);
    matmulModeFast('nn', a, b, y, 37, 41, 29);
    expect(Buffer.from(x.buffer).equals(Buffer.from(y.buffer))).toBe(true);
  });
});

import { describe, expect, it } from 'vitest';
import { uniformF32 } from '../../src/core/random';
import { type MatmulMode, matmulModeCpu } from '../../src/engine/cpu/matmul';
import { matmulModeFast } from '../../src/engine/cpu/matmulFast';

function maxAbs(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
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
  // Shapes not multiples of the 4×4 blocks, single rows (decode), and the model's shapes.
  const shapes: [number, number, number][] = [
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
          // both sum in doubles, in different orders: f32 rounding of the stored result only
          expect(maxAbs(got, want)).toBeLessThanOrEqual(1e-6 * Math.max(1, K));
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

import { describe, expect, it } from 'vitest';
import { uniformF32 } from '../../src/core/random';
import { attentionBackwardCpu, attentionForwardCpu } from '../../src/engine/cpu/attention';
import { attentionBackwardFast, attentionForwardFast } from '../../src/engine/cpu/attentionFast';
import { matmulModeCpu } from '../../src/engine/cpu/matmul';
import { matmulModeFast } from '../../src/engine/cpu/matmulFast';

function maxAbs(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

describe('fast CPU attention vs the reference loops', () => {
  // head sizes below and above one SIMD panel, T not a multiple of the blocks
  const shapes: [number, number, number, number][] = [
    [1, 1, 8, 2],
    [2, 7, 12, 3],
    [3, 33, 64, 4],
    [1, 20, 48, 1],
  ];
  for (const [B, T, C, H] of shapes)
    for (const [name, mm] of [
      ['SIMD matmul', matmulModeFast],
      ['reference matmul', matmulModeCpu],
    ] as const)
      it(`forward and backward agree (B ${B}, T ${T}, C ${C}, H ${H}, ${name})`, () => {
        const qkv = uniformF32(B * T * 3 * C, 11 + T, -2, 2);
        const dout = uniformF32(B * T * C, 12 + T);
        const att = [new Float32Array(B * H * T * T).fill(7), new Float32Array(B * H * T * T).fill(7)];
        const out = [new Float32Array(B * T * C), new Float32Array(B * T * C)];
        const dqkv = [new Float32Array(B * T * 3 * C), new Float32Array(B * T * 3 * C).fill(9)];
        attentionForwardCpu(qkv, att[0], out[0], B, T, C, H);
        attentionForwardFast(qkv, att[1], out[1], B, T, C, H, mm);
        // masked (future) probabilities are exact zeros in both
        for (let i = 0; i < att[0].length; i++) if (att[0][i] === 0) expect(att[1][i]).toBe(0);
        expect(maxAbs(att[1], att[0])).toBeLessThan(1e-5);
        expect(maxAbs(out[1], out[0])).toBeLessThan(1e-5);
        attentionBackwardCpu(qkv, att[0], dout, dqkv[0], B, T, C, H);
        attentionBackwardFast(qkv, att[0], dout, dqkv[1], B, T, C, H, mm);
        expect(maxAbs(dqkv[1], dqkv[0])).toBeLessThan(1e-4);
      });

  it('changes when the input changes (the comparison can fail)', () => {
    const [B, T, C, H] = [1, 5, 8, 2];
    const qkv = uniformF32(B * T * 3 * C, 1, -2, 2);
    const a = new Float32Array(B * T * C);
    const b = new Float32Array(B * T * C);
    attentionForwardFast(qkv, new Float32Array(B * H * T * T), a, B, T, C, H, matmulModeFast);
    qkv[3 * C + 2 * C] += 1; // a value of key 1
    attentionForwardFast(qkv, new Float32Array(B * H * T * T), b, B, T, C, H, matmulModeFast);
    expect(maxAbs(a, b)).toBeGreaterThan(1e-3);
  });
});

import { describe, expect, it } from 'vitest';
import { uniformF32 } from '../../src/core/random';
import { type GqaShape, gqaBackwardCpu, gqaForwardCpu } from '../../src/engine/cpu/gqa';
import { gqaBackwardFast, gqaForwardFast } from '../../src/engine/cpu/gqaFast';

function maxAbs(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

describe('fast CPU grouped-query attention vs the reference loops', () => {
  // groups of 1, 3 and 4 query heads per kv head; a left-padded row; decoding against a cache (offset > 0,
  // Tq < Tk); head sizes one and several panels wide, and one (12) the reference handles alone
  const cases: [string, GqaShape, boolean][] = [
    ['one head', { B: 1, Tq: 1, Tk: 1, H: 1, KV: 1, D: 8, offset: 0 }, false],
    ['group 3, padded rows', { B: 2, Tq: 13, Tk: 13, H: 9, KV: 3, D: 16, offset: 0 }, true],
    ['group 4, T above D', { B: 1, Tq: 37, Tk: 37, H: 8, KV: 2, D: 24, offset: 0 }, false],
    ['multi-head, D 64', { B: 2, Tq: 20, Tk: 20, H: 2, KV: 2, D: 64, offset: 0 }, true],
    ['decoding 3 tokens after 9', { B: 1, Tq: 3, Tk: 12, H: 4, KV: 2, D: 32, offset: 9 }, false],
    ['head size 12 (reference path)', { B: 1, Tq: 5, Tk: 5, H: 2, KV: 1, D: 12, offset: 0 }, false],
  ];
  for (const [name, s, padded] of cases)
    it(`forward and backward agree (${name})`, () => {
      const { B, Tq, Tk, H, KV, D } = s;
      const q = uniformF32(B * Tq * H * D, 3 + Tq, -2, 2);
      const k = uniformF32(B * Tk * KV * D, 4 + Tk, -2, 2);
      const v = uniformF32(B * Tk * KV * D, 5 + Tk);
      const dy = uniformF32(B * Tq * H * D, 6 + Tq);
      let mask: Float32Array | null = null;
      if (padded) {
        // row 1 left-padded by 3 (its first queries attend nothing), row 0 with one masked key inside
        mask = new Float32Array(B * Tk).fill(1);
        mask[2] = 0;
        for (let j = 0; j < 3; j++) mask[Tk + j] = 0;
      }
      const probs = [new Float32Array(B * H * Tq * Tk).fill(7), new Float32Array(B * H * Tq * Tk).fill(7)];
      const y = [new Float32Array(B * Tq * H * D), new Float32Array(B * Tq * H * D).fill(9)];
      gqaForwardCpu(q, k, v, mask, probs[0], y[0], s);
      gqaForwardFast(q, k, v, mask, probs[1], y[1], s);
      // masked and future probabilities are exact zeros in both
      let zeros = 0;
      for (let i = 0; i < probs[0].length; i++)
        if (probs[0][i] === 0) {
          zeros++;
          expect(probs[1][i]).toBe(0);
        }
      if (Tq > 1) expect(zeros).toBeGreaterThan(0);
      expect(maxAbs(probs[1], probs[0])).toBeLessThan(2e-6);
      expect(maxAbs(y[1], y[0])).toBeLessThan(1e-5);
      const grads = () => ({
        dq: new Float32Array(q.length).fill(5),
        dk: new Float32Array(k.length).fill(5),
        dv: new Float32Array(v.length).fill(5),
      });
      const ref = grads();
      const got = grads();
      gqaBackwardCpu(q, k, v, probs[0], dy, ref.dq, ref.dk, ref.dv, s);
      gqaBackwardFast(q, k, v, probs[0], dy, got.dq, got.dk, got.dv, s);
      expect(maxAbs(got.dq, ref.dq)).toBeLessThan(2e-5);
      expect(maxAbs(got.dk, ref.dk)).toBeLessThan(2e-5);
      expect(maxAbs(got.dv, ref.dv)).toBeLessThan(2e-5);
      // the gradients are not trivially zero
      expect(maxAbs(ref.dv, new Float32Array(v.length))).toBeGreaterThan(1e-3);
      if (Tk > 1) expect(maxAbs(ref.dk, new Float32Array(k.length))).toBeGreaterThan(1e-3);
    });
});

import { describe, expect, it } from 'vitest';
import { uniformF32 } from '../../src/core/random';
import { geluBackwardCpu, geluForwardCpu } from '../../src/engine/cpu/gelu';
import { geluBackwardFast, geluForwardFast } from '../../src/engine/cpu/geluFast';
import { logprobBackwardCpu, logprobForwardCpu } from '../../src/engine/cpu/logprob';
import { logprobBackwardFast, logprobForwardFast } from '../../src/engine/cpu/logprobFast';

function maxAbs(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

describe('fast CPU log-softmax vs the reference', () => {
  // V below, at and off the four-lane width; temperatures 1 and 0.7; logits spread wide enough to underflow
  const cases: [number, number, number, number, number][] = [
    [1, 3, 3, 1, 4],
    [2, 5, 1024, 1, 8],
    [3, 4, 37, 0.7, 30],
    [1, 6, 130, 1, 120],
  ];
  for (const [B, T, V, temperature, spread] of cases)
    it(`forward and backward agree (B ${B}, T ${T}, V ${V}, temperature ${temperature}, logits ±${spread})`, () => {
      const N = B * T;
      const logits = uniformF32(N * V, V + T, -spread, spread);
      const tokens = Uint32Array.from(uniformF32(N, 7, 0, 1), (x) => Math.floor(x * V));
      const mask = Float32Array.from({ length: N }, (_, i) => (i % 3 === 2 ? 0 : 1));
      const weights = uniformF32(N, 9);
      const want = logprobForwardCpu(logits, tokens, mask, B, T, V, temperature);
      const got = logprobForwardFast(logits, tokens, mask, B, T, V, temperature);
      expect(maxAbs(got.lse, want.lse)).toBeLessThan(2e-6 * Math.max(1, spread / temperature));
      expect(maxAbs(got.logp, want.logp)).toBeLessThan(2e-6 * Math.max(1, spread / temperature));
      expect(maxAbs(got.entropy, want.entropy)).toBeLessThan(1e-5);
      // masked and first positions stay exact zeros
      for (let i = 0; i < N; i++) if (want.logp[i] === 0) expect(got.logp[i]).toBe(0);
      const dWant = logprobBackwardCpu(logits, tokens, weights, want.lse, B, T, V, temperature);
      const dGot = logprobBackwardFast(logits, tokens, weights, want.lse, B, T, V, temperature);
      // the f32 argument z/temperature − lse carries an error of its magnitude times 2⁻²⁴ into p
      expect(maxAbs(dGot, dWant)).toBeLessThan((2e-7 * (1 + spread / temperature)) / temperature);
      for (let i = 0; i < dWant.length; i++)
        if (dWant[i] === 0) expect(Math.abs(dGot[i])).toBeLessThan(1e-30);
    });
});

describe('fast CPU GELU vs the reference', () => {
  for (const n of [1, 7, 1000])
    it(`forward and backward agree on ${n} values from −12 to 12`, () => {
      const x = uniformF32(n, n, -12, 12);
      x[0] = n === 1 ? 0 : x[0];
      const dy = uniformF32(n, n + 1);
      const want = new Float32Array(n);
      const got = new Float32Array(n).fill(5);
      geluForwardCpu(x, want);
      geluForwardFast(x, got);
      for (let i = 0; i < n; i++)
        expect(Math.abs(got[i] - want[i])).toBeLessThanOrEqual(4e-7 * Math.max(1, Math.abs(x[i])));
      const dWant = new Float32Array(n);
      const dGot = new Float32Array(n).fill(5);
      geluBackwardCpu(x, dy, dWant);
      geluBackwardFast(x, dy, dGot);
      // 1 − tanh² cancels in f32 where |x| is large: the error grows with x²
      for (let i = 0; i < n; i++)
        expect(Math.abs(dGot[i] - dWant[i])).toBeLessThanOrEqual(2e-7 * Math.max(1, x[i] * x[i]));
    });
});

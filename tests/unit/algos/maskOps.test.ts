import { describe, expect, it } from 'vitest';
import { countRange, fillMasked, maskWords } from '../../../src/core/algos/maskOps';
import { mulberry32 } from '../../../src/core/random';

describe('mask word ops', () => {
  it('countRange and fillMasked match per-token loops for every alignment, run structure and range', () => {
    const rand = mulberry32(3);
    for (const shift of [0, 1, 2, 3]) {
      const buf = new Uint8Array(300);
      for (let t = 0; t < buf.length; ) {
        const run = 1 + Math.floor(rand() * 12);
        buf.fill(rand() < 0.6 ? 1 : 0, t, t + run);
        t += run;
      }
      const mask = buf.subarray(shift, shift + 290);
      const mw = maskWords(mask);
      for (let k = 0; k < 60; k++) {
        const a = Math.floor(rand() * 290);
        const e = Math.min(290, a + Math.floor(rand() * 40));
        let c = 0;
        for (let t = a; t < e; t++) c += mask[t];
        expect(countRange(mw, a, e)).toBe(c);
        const out = new Float32Array(290).fill(7);
        fillMasked(out, -0.25, mw, a, e);
        for (let t = 0; t < 290; t++) expect(out[t]).toBe(t >= a && t < e ? (mask[t] ? -0.25 : -0) : 7);
      }
    }
  });
  it('NaN stays NaN on masked positions, as NaN·0 in torch', () => {
    const mask = Uint8Array.of(1, 0, 1, 0, 0);
    const out = new Float32Array(5);
    fillMasked(out, Number.NaN, maskWords(mask), 0, 5);
    expect(out.every((x) => Number.isNaN(x))).toBe(true);
  });
});
